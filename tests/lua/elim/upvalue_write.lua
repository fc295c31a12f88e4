-- Barrier elimination: a call writes another frame's register through an open upvalue. The
-- caller's next access of that register is barrier-free (its old object was accessed before
-- the call), which is sound only because the write marks what it writes: with that broken
-- (OBJPROF_LUA_ELIM_FAULT=no-frame-writes) objprof-lua-check must report violations.
local holder = {}
for i = 1, 5 do holder[i] = {n = i} end
local a = {}
local function swap(i) a = holder[i] end
local sum = 0
for i = 1, 5 do
  collectgarbage()      -- holder's tables are unmarked in the new epoch (no register holds them)
  a.seen = true         -- a is accessed ...
  swap(i)               -- ... then replaced by a table nothing has accessed in this epoch
  sum = sum + a.n       -- barrier-free: the pass knows nothing of the write
end
print(sum)
