-- worker_deregister: remove a registration on graceful shutdown.
-- KEYS: worker workers
-- ARGV: now worker_instance_id session_id

local w = worker_load(K_worker)
if w == nil or w.session ~= A_session_id then return { 'removed', 0 } end
redis.call('DEL', K_worker)
redis.call('ZREM', K_workers, A_worker_instance_id)
return { 'removed', 1 }
