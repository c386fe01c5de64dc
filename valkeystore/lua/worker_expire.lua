-- worker_expire: drop up to limit registrations that expired before now, in
-- instance-id order. A record already collected by its garbage-collection
-- TTL had expired too.
-- KEYS: workers
-- ARGV: now limit

local now = now_ms()
local limit = N(A_limit)
local removed = {}
for _, wi in ipairs(redis.call('ZRANGE', K_workers, '0', '-1')) do
  if #removed >= limit then break end
  local key = worker_key(wi)
  local w = worker_load(key)
  if w == nil or not worker_alive(w, now) then
    redis.call('DEL', key)
    redis.call('ZREM', K_workers, wi)
    removed[#removed + 1] = wi
  end
end
return { 'removed', removed }
