-- Penlight (Debian's lua-penlight, run from its installed files): lists, table and string
-- helpers, classes, pretty printing, ordered maps.
local List = require("pl.List")
local tablex = require("pl.tablex")
local stringx = require("pl.stringx")
local pretty = require("pl.pretty")
local class = require("pl.class")
local OrderedMap = require("pl.OrderedMap")
local seq = require("pl.seq")

local l = List({10, 20, 30, 40})
l:append(50)
print(l, l:map(function(x) return x / 10 end), l:filter(function(x) return x > 25 end), l:reduce("+"))
print(tablex.size({a = 1, b = 2, 3}), tablex.deepcompare({1, {2}}, {1, {2}}), table.concat(tablex.keys({x = 1}), ","))
print(stringx.split("a,b,,c", ","), stringx.strip("  pad  "), stringx.startswith("objprof", "obj"))
print(pretty.write({1, 2, name = "x", nested = {true, false}}, ""))
local Point = class()
function Point:_init(x, y) self.x, self.y = x, y end
function Point:__tostring() return ("Point(%d, %d)"):format(self.x, self.y) end
local Point3 = class(Point)
function Point3:_init(x, y, z) self:super(x, y) self.z = z end
print(Point(1, 2), Point3(1, 2, 3).z, Point3:class_of(Point3(0, 0, 0)), Point:class_of(Point3(0, 0, 0)))
local om = OrderedMap()
for _, k in ipairs({"z", "a", "m"}) do om:set(k, #k) end
print(table.concat(om:keys(), ""), seq.sum(seq.range(1, 100)))
local words = List(stringx.split("the quick brown fox jumps over the lazy dog"))
words:sort()
print(words:concat(" "), #words)
