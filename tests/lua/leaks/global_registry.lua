-- A handler registry in a global table: every request registers a handler under a string key
-- and nobody ever unregisters or calls it, so the handlers pile up behind the global.
Registry = {}
local function handle(id)
  local h = {id = id, data = {}}  -- LEAK
  for i = 1, 40 do h.data[i] = id + i end
  Registry["req" .. id] = h
  return #h.data
end
local function churn()  -- short-lived garbage, as any program makes
  local t = {}
  for i = 1, 400 do t[i] = {i} end
  return #t
end
local total = 0
for id = 1, 6000 do
  total = total + handle(id)
  if id % 25 == 0 then total = total + churn() end
end
for _ = 1, 300 do total = total + churn() end
print("total", total)
-- PATH: Lua globals (_G) -> (table 0x
-- PATH: ).Registry -> (table 0x
