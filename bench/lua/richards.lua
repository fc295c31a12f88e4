-- An operating-system scheduler simulation in the style of the Richards benchmark: objects
-- with methods through metatables, queues of packets, state changes (method calls and field
-- access on a fixed set of objects, a little allocation).
local rounds = tonumber(arg and arg[1]) or 400
local Packet = {}
Packet.__index = Packet
function Packet.new(link, id, kind) return setmetatable({link = link, id = id, kind = kind, a1 = 0, a2 = {0, 0, 0, 0}}, Packet) end
function Packet:append(queue)
  self.link = nil
  if not queue then return self end
  local p = queue
  while p.link do p = p.link end
  p.link = self
  return queue
end
local Task = {}
Task.__index = Task
function Task.new(sched, id, pri, queue, fn) local t = setmetatable({sched = sched, id = id, pri = pri, queue = queue, fn = fn, held = false, waiting = queue ~= nil, count = 0}, Task) return t end
function Task:run(packet) self.count = self.count + 1 return self.fn(self, packet) end
local Scheduler = {}
Scheduler.__index = Scheduler
function Scheduler.new() return setmetatable({tasks = {}, order = {}, holds = 0, qpkts = 0}, Scheduler) end
function Scheduler:add(id, pri, queue, fn)
  local t = Task.new(self, id, pri, queue, fn)
  self.tasks[id] = t
  self.order[#self.order + 1] = t
  table.sort(self.order, function(a, b) return a.pri > b.pri end)
  return t
end
function Scheduler:queue(packet)
  local t = self.tasks[packet.id]
  self.qpkts = self.qpkts + 1
  t.queue = packet:append(t.queue)
  t.waiting = true
end
function Scheduler:schedule()
  local progress = true
  while progress do
    progress = false
    for _, t in ipairs(self.order) do
      if t.waiting and t.queue and not t.held then
        local p = t.queue
        t.queue = p.link
        t.waiting = t.queue ~= nil
        t:run(p)
        progress = true
        break
      end
    end
  end
end
local total = 0
for round = 1, rounds do
  local s = Scheduler.new()
  local worker = function(task, p)
    p.a1 = (p.a1 + 1) % 26
    for i = 1, 4 do p.a2[i] = (p.a2[i] + p.a1 + i) % 26 end
    if task.count < 40 then p.id = task.id == 3 and 4 or 3 task.sched:queue(p) end
  end
  local device = function(task, p) task.sched.holds = task.sched.holds + 1 end
  s:add(3, 100, nil, worker)
  s:add(4, 90, nil, worker)
  s:add(5, 50, nil, device)
  for k = 1, 10 do s:queue(Packet.new(nil, k % 2 == 0 and 3 or 4, k)) end
  s:queue(Packet.new(nil, 5, 0))
  s:schedule()
  total = total + s.qpkts + s.holds
end
print(total)
