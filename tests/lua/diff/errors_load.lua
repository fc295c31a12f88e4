-- Errors, pcall/xpcall, error objects, load of text and binary chunks, string.dump.
local ok, e = pcall(error, {code = 42})
print(ok, type(e), e.code)
print(select("#", pcall(function() return 1, 2, 3 end)))
print(xpcall(function() local x = nil; return x.field end, function(m) return "handled: " .. m:gsub("^.-:%d+: ", "") end))
print(pcall(string.rep))
print(pcall(setmetatable, 1, {}))
local f = load("local a, b = ... return a * b, 'chunk'")
print(f(6, 7))
print(load("return +"))
local env = {print = print, x = 5}
print(load("x = x + 1 return x", "t", "t", env)(), env.x)
local dumped = string.dump(function(a) return a .. "!" end)
print(#dumped > 0, load(dumped, "d", "b")("bin"))
print(pcall(load, dumped, "d", "t"))
local depth = 0
local function recurse() depth = depth + 1 return recurse() + 1 end
print(pcall(recurse), depth > 1000)
print(string.format("%s", setmetatable({}, {__tostring = function() return "custom" end})))
print(tostring(1e100), 2^53, math.maxinteger, math.mininteger, -0.0, 1/0, -1/0, tostring(0/0) == tostring(0/0))
