-- worker_register: register (or refresh) a worker instance; a live
-- registration with another session is a duplicate process.
-- KEYS: worker workers
-- ARGV: now worker_id worker_instance_id session_id lanes capabilities ttl gc_slack

local now = now_ms()
local old = worker_load(K.worker)
local status = 'registered'
local registered_at = now
if old ~= nil and worker_alive(old, now) then
  if old.session ~= A.session_id then
    return fail('duplicate_worker_instance', A.worker_instance_id)
  end
  status = 'refreshed'
  registered_at = N(old.registered_at)
end
local ttl = N(A.ttl)
redis.call('DEL', K.worker)
redis.call('HSET', K.worker, 'worker_id', A.worker_id, 'instance', A.worker_instance_id,
  'session', A.session_id, 'lanes', A.lanes, 'caps', A.capabilities, 'ttl', S(ttl),
  'registered_at', S(registered_at), 'heartbeat_at', S(now), 'expires_at', S(now + ttl))
redis.call('PEXPIRE', K.worker, S(ttl + N(A.gc_slack)))
redis.call('ZADD', K.workers, '0', A.worker_instance_id)
return { 'status', status, 'expires_at', now + ttl }
