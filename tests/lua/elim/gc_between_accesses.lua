-- Barrier elimination: an access after a collection, covered by one before it. Sound only
-- because atomic() marks the objects in live registers (root marks): with them broken
-- (OBJPROF_LUA_ELIM_FAULT=no-root-marks) objprof-lua-check must report violations.
local t = {}
t.x = 1                 -- the table is new: marked by the allocator
for i = 1, 5 do
  collectgarbage()      -- a new epoch: only the root marks mark t again
  t.y = i               -- barrier-free: t was accessed above and is still in its register
  t.x = t.x + t.y
end
print(t.x, t.y)
