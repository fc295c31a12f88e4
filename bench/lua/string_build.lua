-- String building: concatenation, table.concat, formatting and pattern matching (many
-- short-lived strings).
local n = tonumber(arg and arg[1]) or 200000
local parts = {}
for i = 1, n do parts[#parts + 1] = string.format("%d:%s;", i, tostring(i * 7)) end
local s = table.concat(parts)
local count = 0
for a, b in s:gmatch("(%d+):(%d+);") do if tonumber(b) % 3 == 0 then count = count + 1 end end
local acc = ""
for i = 1, 2000 do acc = acc .. (i % 10) end
local words = {}
for w in (("lorem ipsum dolor sit amet "):rep(n // 20)):gmatch("%a+") do words[#words + 1] = w:upper() end
print(#s, count, #acc, #words)
