-- A memo cache nobody reads: every result is kept, none is ever looked up again.
local cache = {}
local function expensive(n)
  local result = {}  -- LEAK
  for i = 1, 64 do result[i] = n * i end
  cache[n] = result
  return #result
end
local function churn()  -- ordinary short-lived garbage, as any program makes
  local tmp = {}
  for i = 1, 500 do tmp[i] = {i} end
  return #tmp
end
local total = 0
for n = 1, 20000 do
  total = total + expensive(n)
  if n % 50 == 0 then total = total + churn() end
end
for _ = 1, 300 do total = total + churn() end
print("total", total)
-- PATH: local 'cache' of the main chunk (
-- PATH: memo_cache.lua) -> (table 0x
