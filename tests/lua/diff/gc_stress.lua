-- Allocation-heavy work under both collector modes: tables that grow and shrink, strings,
-- closures, explicit collections and mode switches mid-run.
local function tree(depth)
  if depth == 0 then return {} end
  return {tree(depth - 1), tree(depth - 1)}
end
local function check(t) if not t[1] then return 1 end return 1 + check(t[1]) + check(t[2]) end
local long_lived = tree(12)
local n = 0
for round = 1, 30 do
  n = n + check(tree(8))
  if round == 10 then collectgarbage("incremental") end
  if round == 20 then collectgarbage("generational") end
  if round % 7 == 0 then collectgarbage("step", 0) end
end
print("nodes", n, check(long_lived))

local big = {}
for i = 1, 100000 do big[i] = i end
for i = 100000, 1, -1 do big[i] = nil end
for i = 1, 1000 do big["k" .. i] = i end
local keys = 0
for _ in pairs(big) do keys = keys + 1 end
print("keys", keys)

local parts = {}
for i = 1, 20000 do parts[#parts + 1] = tostring(i):rep(3) end
local s = table.concat(parts)
print("string", #s, s:sub(1, 12), s:sub(-9))

local fns = {}
for i = 1, 10000 do fns[i] = function() return i end end
local acc = 0
for i = 1, #fns, 100 do acc = acc + fns[i]() end
print("closures", acc)
collectgarbage()
print("done", collectgarbage("isrunning"))
