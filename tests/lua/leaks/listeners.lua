-- A listener registry: widgets subscribe and are never unsubscribed, so every widget's buffer
-- stays reachable through its listener's upvalue although nobody uses it again.
local listeners = {}
local function subscribe(fn) listeners[#listeners + 1] = fn end
local function make_widget(id)
  local buffer = {}  -- LEAK
  for i = 1, 200 do buffer[i] = id + i end
  subscribe(function(event) if event == id then return buffer[1] end end)
  return #buffer
end
local function churn()
  local tmp = {}
  for i = 1, 500 do tmp[i] = {i} end
  return #tmp
end
local n = 0
for id = 1, 8000 do
  n = n + make_widget(id)
  if id % 20 == 0 then n = n + churn() end
end
for _ = 1, 300 do n = n + churn() end
print("widgets", #listeners, n)
-- PATH: local 'listeners' of the main chunk (
-- PATH: ).buffer -> (table 0x
