-- Binary trees: allocation of many short-lived and some long-lived tables.
local depth_max = tonumber(arg and arg[1]) or 14
local function make(d)
  if d == 0 then return {} end
  d = d - 1
  return {make(d), make(d)}
end
local function check(t)
  if t[1] then return 1 + check(t[1]) + check(t[2]) end
  return 1
end
local long_lived = make(depth_max)
local total = 0
for d = 4, depth_max, 2 do
  local iterations = 1 << (depth_max - d + 4)
  for _ = 1, iterations do total = total + check(make(d)) end
end
print(total, check(long_lived))
