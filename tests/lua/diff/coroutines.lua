-- Generators, wrap, status, yields across pcall, close, many coroutines alive at once.
local function gen(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i * i) end
  end)
end
local out = {}
for v in gen(8) do out[#out + 1] = v end
print(table.concat(out, " "))

local co = coroutine.create(function(a, b)
  local c = coroutine.yield(a + b)
  local ok, err = pcall(function() coroutine.yield(c * 2); error("inner") end)
  return ok, err
end)
print(coroutine.resume(co, 1, 2))
print(coroutine.status(co), coroutine.resume(co, 10))
print(coroutine.resume(co))
print(coroutine.status(co), coroutine.resume(co))

local cos = {}
for i = 1, 2000 do
  cos[i] = coroutine.create(function(x) local t = {} for k = 1, 10 do t[k] = x + k end coroutine.yield(#t) return t[10] end)
end
local total = 0
for i = 1, #cos do local _, n = coroutine.resume(cos[i], i) total = total + n end
for i = 1, #cos, 2 do local _, n = coroutine.resume(cos[i]) total = total + n end
print("total", total, coroutine.status(cos[1]), coroutine.status(cos[2]))
local closing = coroutine.create(function() local x <close> = setmetatable({}, {__close = function() print("closed") end}) coroutine.yield() end)
coroutine.resume(closing)
print(coroutine.close(closing), coroutine.status(closing))
print(coroutine.isyieldable(), select(2, coroutine.running()))
