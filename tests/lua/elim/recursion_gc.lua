-- Barrier elimination and recursion: a Lua frame that calls its own closure runs no barrier on
-- it (luai_objprof_call), because the closure sits in the frame's function slot and is
-- root-marked at every collection. Here a collection comes in the middle of a recursion, so
-- the calls after it are sound only with root marks: with them broken
-- (OBJPROF_LUA_ELIM_FAULT=no-root-marks) objprof-lua-check must report violations. The
-- function reaches itself through a parameter, not an upvalue (whose marks are another promise).
local function walk(self, n)
  if n == 0 then return 0 end
  if n == 5 then collectgarbage() end
  return 1 + self(self, n - 1)
end
local total = 0
for _ = 1, 4 do total = total + walk(walk, 10) end
print(total)
