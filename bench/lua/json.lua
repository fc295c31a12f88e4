-- A real library workload: Debian's dkjson (installed lua-dkjson) encoding and decoding
-- documents of nested records.
local json = require("dkjson")
local rounds = tonumber(arg and arg[1]) or 60
local function document(seed)
  local items = {}
  for i = 1, 200 do
    items[i] = {id = seed * 1000 + i, name = "item" .. i, tags = {"a", "b", tostring(i % 7)}, price = i * 1.25,
                nested = {ok = i % 2 == 0, values = {i, i + 1, i + 2}}}
  end
  return {seed = seed, items = items, meta = {count = #items, title = "document " .. seed}}
end
local bytes, sum = 0, 0
for r = 1, rounds do
  local text = json.encode(document(r))
  bytes = bytes + #text
  local back = json.decode(text)
  sum = sum + back.meta.count + back.items[200].id
end
print(bytes, sum)
