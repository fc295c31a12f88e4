-- Barrier elimination on upvalue tables: a coroutine's closure reads `cfg`, a local of the main
-- chunk (an open upvalue), before and after it yields. While it waits, the main chunk puts
-- another table in `cfg` with an ordinary write (no mark) after a collection. The closure's
-- second read is barrier-free (its first read covers it), which is sound only because a thread
-- that runs again marks what its frames' upvalues hold: with that broken
-- (OBJPROF_LUA_ELIM_FAULT=no-upvalue-marks) objprof-lua-check must report violations.
local pool = {}
for i = 1, 5 do pool[i] = {n = i} end
local cfg = {n = 0}
local seen = 0
local co = coroutine.wrap(function()
  while true do
    seen = seen + cfg.n     -- the upvalue's table is accessed ...
    coroutine.yield()
    seen = seen + cfg.n     -- ... and again, without a barrier, after the main chunk replaced it
  end
end)
for i = 1, 5 do
  co()
  collectgarbage()          -- pool's tables are unmarked in the new epoch
  cfg = pool[i]             -- an ordinary write into the main chunk's register
  co()
end
print(seen)
