-- worker_deregister: remove a registration on graceful shutdown.
-- KEYS: worker workers
-- ARGV: now worker_instance_id session_id

local w = worker_load(K.worker)
if w == nil or w.session ~= A.session_id then return { 'removed', 0 } end
redis.call('DEL', K.worker)
redis.call('ZREM', K.workers, A.worker_instance_id)
return { 'removed', 1 }
