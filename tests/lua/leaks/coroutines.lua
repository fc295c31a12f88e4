-- Suspended coroutines kept forever: each parks with its working state and is never resumed.
local parked = {}
local function worker(i)
  local state = {}  -- LEAK
  for j = 1, 120 do state[j] = i * j end
  coroutine.yield(#state)
  return state[1]
end
local function churn()
  local tmp = {}
  for i = 1, 500 do tmp[i] = {i} end
  return #tmp
end
local n = 0
for i = 1, 6000 do
  local co = coroutine.create(worker)
  local _, k = coroutine.resume(co, i)
  n = n + k
  parked[#parked + 1] = co
  if i % 20 == 0 then n = n + churn() end
end
for _ = 1, 300 do n = n + churn() end
print("parked", #parked, n)
-- PATH: local 'parked' of the main chunk (
-- PATH: -> (thread 0x
