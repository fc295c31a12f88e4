-- No leak: large, long-lived data that the program keeps using, and short-lived garbage.
local data = {}
for i = 1, 40000 do data[i] = {id = i, value = i * 2} end
local index = {}
for i = 1, 4000 do index["k" .. i] = {i, i + 1, i + 2, i + 3} end
local sum = 0
for round = 1, 60 do
  for i = 1, #data do sum = sum + data[i].value end
  for k, v in pairs(index) do sum = sum + v[1] end
  local tmp = {}
  for i = 1, 3000 do tmp[i] = {i} end
  sum = sum + #tmp
end
print("sum", sum)
