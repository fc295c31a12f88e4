-- The arg table, stdin and the exit status, as lua5.4 gives them to a script.
print("args", #arg, arg[0] ~= nil, arg[1], arg[2], arg[3])
print("varargs", select("#", ...), ...)
local lines = {}
for line in io.lines() do lines[#lines + 1] = line:upper() end
print("stdin", #lines, table.concat(lines, "|"))
io.write("no newline")
io.stdout:flush()
os.exit(3)
