-- A log of small records: each record is far below the online threshold, so only the offline
-- analysis (objprof report on the trace) can rank the site.
local log = {}
local function record(i)
  log[#log + 1] = {t = i, level = i % 3}  -- LEAK
end
local function churn()
  local tmp = {}
  for i = 1, 200 do tmp[i] = {i} end
  return #tmp
end
local n = 0
for i = 1, 60000 do
  record(i)
  if i % 40 == 0 then n = n + churn() end
end
for _ = 1, 300 do n = n + churn() end
print("records", #log, n)
