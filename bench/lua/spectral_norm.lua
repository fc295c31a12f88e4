-- Spectral norm: arithmetic over arrays (array reads and writes, little allocation).
local n = tonumber(arg and arg[1]) or 300
local function a(i, j)
  local ij = i + j - 1
  return 1.0 / (ij * (ij - 1) * 0.5 + i)
end
local function av(x, y, m)
  for i = 1, m do
    local s = 0
    for j = 1, m do s = s + a(i, j) * x[j] end
    y[i] = s
  end
end
local function atv(x, y, m)
  for i = 1, m do
    local s = 0
    for j = 1, m do s = s + a(j, i) * x[j] end
    y[i] = s
  end
end
local function atav(x, y, t, m) av(x, t, m); atv(t, y, m) end
local u, v, t = {}, {}, {}
for i = 1, n do u[i] = 1 end
for _ = 1, 10 do atav(u, v, t, n); atav(v, u, t, n) end
local vbv, vv = 0, 0
for i = 1, n do
  local ui, vi = u[i], v[i]
  vbv, vv = vbv + ui * vi, vv + vi * vi
end
print(string.format("%0.9f", math.sqrt(vbv / vv)))
