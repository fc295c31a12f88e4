-- Sites are cached by the address of the allocating instruction: when a chunk's code dies,
-- another chunk's code may take its memory, and its allocations must not inherit the dead
-- chunk's site. Many chunks with the same bytecode as the leaking one (but another name and
-- line) allocate, then die; the leaking chunk is loaded after them, with this file's name and
-- its allocation on the line marked below, so the report must name this line and not "garbage".
local name = "@" .. (arg and arg[0] or "reused_code.lua"):match("[^/]*$")
local here = 13  -- the line of the leaking allocation in this file (the marked line)
local body = "local keep = ... local t = {} for i = 1, 64 do t[i] = i end keep[#keep + 1] = t return #keep"
for i = 1, 300 do
  local f = assert(load(string.rep("\n", 40) .. body, "=garbage"))
  f({})
end
collectgarbage() collectgarbage()  -- LEAK: the chunk below allocates "on this line"
local leak = assert(load(string.rep("\n", here - 1) .. body, name))
local kept, total = {}, 0
for _ = 1, 4000 do total = total + leak(kept) end  -- each call keeps one more table, never read again
for _ = 1, 20 do collectgarbage() end
print("total", total)
