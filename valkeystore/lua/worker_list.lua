-- worker_list: the live registrations of a namespace in instance-id order.
-- KEYS: workers
-- ARGV: now

local now = now_ms()
local workers = {}
for _, wi in ipairs(redis.call('ZRANGE', K_workers, '0', '-1')) do
  local w = worker_load(worker_key(wi))
  if w ~= nil and worker_alive(w, now) then
    workers[#workers + 1] = w
  end
end
return ok({ workers = workers })
