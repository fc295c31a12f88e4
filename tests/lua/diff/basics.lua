-- Numbers, strings, patterns, tables, goto, varargs, bitwise operators.
print(7 // 2, 7 % 3, 2^10, 7 / 2, math.type(1), math.type(1.0), 1 == 1.0, 0x7fffffffffffffff + 1)
print(3 & 5, 3 | 5, 3 ~ 5, ~0, 1 << 62, -1 >> 1)
print(string.format("%d %5.2f %s %q %x", 42, math.pi, "str", "a\nb", 255))
local s = "the quick brown fox jumps over the lazy dog"
print(s:upper(), #s, s:find("fox"), s:match("(%a+) dog"), (s:gsub("o", "0")))
local words = {}
for w in s:gmatch("%a+") do words[#words + 1] = w end
table.sort(words, function(a, b) return #a > #b or (#a == #b and a < b) end)
print(table.concat(words, ","))
print(utf8.char(72, 228, 8364, 128512), utf8.len("häll€"), #utf8.char(128512))
for p, c in utf8.codes("hä€") do io.write(p, ":", c, " ") end
print()
local function sum(...)
  local n, t = select("#", ...), 0
  for i = 1, n do t = t + (select(i, ...) or 0) end
  return t, n
end
print(sum(1, 2, 3, nil, 5))
local i = 0
::top::
i = i + 1
if i < 5 then goto top end
print("goto", i)
local t = {}
for k = 1, 100 do t[k] = k * k end
for k = 1, 50 do table.remove(t, 1) end
table.insert(t, 1, -1)
print(#t, t[1], t[2], t[#t], table.unpack(t, 1, 3))
local m = setmetatable({}, {__index = function(_, k) return k .. "!" end})
print(m.hello, rawget(m, "hello"), next({}), type(next), tostring(nil), tonumber("0x10"), tonumber("  12  "))
print(math.max(3, 9, 1), math.min(3, 9, 1), math.floor(-3.5), math.ceil(-3.5), math.fmod(7, 3), math.tointeger(3.0))
print(string.rep("ab", 3, "-"), ("x"):byte(), string.char(65, 66), ("%d items"):format(3), ("abc"):sub(-2))
print(select(-1, 1, 2, 3), #{n = 1}, #"\0\0")
