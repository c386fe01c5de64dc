-- execution_create: create one execution, or report the duplicate its id or
-- idempotency key names.
-- KEYS: core payload tags idem lanes all deadline
-- ARGV: now id namespace lane kind payload priority tags required_caps retry_max retry_backoff retry_delay_ms retry_initial_ms retry_multiplier retry_max_delay_ms max_reclaims max_replays attempt_timeout deadline delay_until idem_key idem_ttl gc_slack

local now = now_ms()

local function duplicate(id)
  local e = load_exec(exec_keys_of(id))
  if e == nil then return { 'id', id, 'duplicate', 1 } end
  return { 'id', id, 'duplicate', 1, 'state', vector(e) }
end

if A.idem_key ~= '' then
  local ent = redis.call('HMGET', K.idem, 'id', 'expires_at')
  if ent[1] and N(ent[2]) > now then return duplicate(ent[1]) end
end
if redis.call('EXISTS', K.core) == 1 then return duplicate(A.id) end

local e = blank_exec(exec_keys(string.sub(K.core, 1, -6)))
e.id, e.ns, e.lane, e.kind = A.id, A.namespace, A.lane, A.kind
e.priority = N(A.priority)
e.created_at = now
e.required_caps = A.required_caps
e.retry_max, e.retry_backoff = N(A.retry_max), A.retry_backoff
e.retry_delay_ms, e.retry_initial_ms = N(A.retry_delay_ms), N(A.retry_initial_ms)
e.retry_multiplier, e.retry_max_delay_ms = A.retry_multiplier, N(A.retry_max_delay_ms)
e.max_reclaims, e.max_replays = N(A.max_reclaims), N(A.max_replays)
e.attempt_timeout, e.deadline = N(A.attempt_timeout), N(A.deadline)

if A.payload ~= '' then redis.call('SET', K.payload, A.payload) end
local tags = netstrings(A.tags)
if #tags > 0 then redis.call('HSET', K.tags, unpack(tags)) end
redis.call('ZADD', K.lanes, '0', e.lane)
redis.call('ZADD', K.all, '0', e.id)
if e.deadline ~= 0 then redis.call('ZADD', K.deadline, S(e.deadline), e.id) end
make_runnable(e, now, N(A.delay_until), 'waiting_for_delay', 'pending_first_attempt')
save_exec(e)

if A.idem_key ~= '' then
  local ttl = N(A.idem_ttl)
  redis.call('DEL', K.idem)
  redis.call('HSET', K.idem, 'id', e.id, 'expires_at', S(now + ttl))
  redis.call('PEXPIRE', K.idem, S(ttl + N(A.gc_slack)))
end
return { 'id', e.id, 'duplicate', 0, 'state', vector(e) }
