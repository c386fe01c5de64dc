-- worker_heartbeat: keep a live registration alive.
-- KEYS: worker
-- ARGV: now worker_instance_id session_id ttl gc_slack

local now = now_ms()
local w = worker_load(K_worker)
if w == nil or not worker_alive(w, now) then return fail('worker_not_registered') end
if w.session ~= A_session_id then return fail('duplicate_worker_instance', A_worker_instance_id) end
local ttl = N(A_ttl)
redis.call('HSET', K_worker, 'ttl', S(ttl), 'heartbeat_at', S(now), 'expires_at', S(now + ttl))
redis.call('PEXPIRE', K_worker, S(ttl + N(A_gc_slack)))
return { 'expires_at', now + ttl }
