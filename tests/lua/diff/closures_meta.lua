-- Closures and upvalues, metatables and metamethods, classes, to-be-closed variables, __gc.
local function counter()
  local n = 0
  return function() n = n + 1; return n end, function() return n end
end
local inc, get = counter()
for _ = 1, 10 do inc() end
print("counter", get())

local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({x = x, y = y}, Vec) end
function Vec.__add(a, b) return Vec.new(a.x + b.x, a.y + b.y) end
function Vec.__eq(a, b) return a.x == b.x and a.y == b.y end
function Vec.__lt(a, b) return a.x < b.x end
function Vec.__le(a, b) return a.x <= b.x end
function Vec.__tostring(v) return "(" .. v.x .. "," .. v.y .. ")" end
function Vec.__len(v) return 2 end
function Vec.__call(v, k) return v[k] end
function Vec.__concat(a, b) return tostring(a) .. tostring(b) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end
local a, b = Vec.new(1, 2), Vec.new(3, 4)
print(tostring(a + b), a == Vec.new(1, 2), a < b, a <= b, #a, a("y"), a .. b, a:dot(b))

local Animal = {}
Animal.__index = Animal
function Animal.new(name) return setmetatable({name = name}, Animal) end
function Animal:speak() return self.name .. " makes a sound" end
local Dog = setmetatable({}, {__index = Animal})
Dog.__index = Dog
function Dog.new(name) local d = Animal.new(name); return setmetatable(d, Dog) end
function Dog:speak() return self.name .. " barks" end
print(Animal.new("cat"):speak(), Dog.new("rex"):speak())

local log = {}
local proxy = setmetatable({}, {
  __newindex = function(t, k, v) log[#log + 1] = k; rawset(t, k, v) end,
})
proxy.a, proxy.b = 1, 2
print("newindex", table.concat(log, ","), proxy.a, proxy.b)

do
  local x <close> = setmetatable({}, {__close = function() print("closed x") end})
  local y <close> = setmetatable({}, {__close = function() print("closed y") end})
  print("in block")
end

local finalized = {}
for i = 1, 5 do setmetatable({}, {__gc = function() finalized[#finalized + 1] = i end}) end
collectgarbage()
collectgarbage()
table.sort(finalized)
print("finalized", table.concat(finalized, ","))

local weak = setmetatable({}, {__mode = "v"})
weak[1] = {}
local keep = {}
weak[2] = keep
collectgarbage()
print("weak", weak[1] == nil, weak[2] == keep)
