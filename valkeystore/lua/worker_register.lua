-- worker_register: register (or refresh) a worker instance; a live
-- registration with another session is a duplicate process.
-- KEYS: worker workers
-- ARGV: now worker_id worker_instance_id session_id lanes capabilities ttl gc_slack

local now = now_ms()
local old = worker_load(K_worker)
local status = 'registered'
local registered_at = now
if old ~= nil and worker_alive(old, now) then
  if old.session ~= A_session_id then
    return fail('duplicate_worker_instance', A_worker_instance_id)
  end
  status = 'refreshed'
  registered_at = N(old.registered_at)
end
local ttl = N(A_ttl)
redis.call('DEL', K_worker)
redis.call('HSET', K_worker, 'worker_id', A_worker_id, 'instance', A_worker_instance_id,
  'session', A_session_id, 'lanes', A_lanes, 'caps', A_capabilities, 'ttl', S(ttl),
  'registered_at', S(registered_at), 'heartbeat_at', S(now), 'expires_at', S(now + ttl))
redis.call('PEXPIRE', K_worker, S(ttl + N(A_gc_slack)))
redis.call('ZADD', K_workers, '0', A_worker_instance_id)
return { 'status', status, 'expires_at', now + ttl }
