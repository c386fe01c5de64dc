-- quota_admit: admit an execution to a bucket (model.QuotaAdmitParams): an
-- admission it holds takes the new token (nothing charged); otherwise the
-- window is trimmed, the rate then the concurrency checked, and the
-- window gains an entry (with a rate) and the bucket an admission.
-- KEYS: quota buckets
-- ARGV: now id key execution token jitter

local q = redis.call('HMGET', K_quota, 'rate', 'window', 'jitter', 'concurrency')
if not q[1] then return fail('quota_not_found') end
local rate, window, jitter, conc = N(q[1]), N(q[2]), N(q[3]), N(q[4])
local now = now_ms()
local w, a = K_quota .. ':w:' .. A_key, K_quota .. ':a:' .. A_key
local function reply(outcome, retry, inwin)
  return { 'outcome', outcome, 'retry_after', retry, 'in_window', inwin, 'active', redis.call('HLEN', a) }
end
if redis.call('HEXISTS', a, A_execution) == 1 then
  redis.call('HSET', a, A_execution, S(now) .. ':' .. A_token)
  return reply('already_admitted', 0, quota_in_window(w, rate, window, now))
end
if rate > 0 then
  redis.call('ZREMRANGEBYSCORE', w, '-inf', S(now - window))
  local n = redis.call('ZCARD', w)
  if n >= rate then
    local j = N(A_jitter)
    if jitter < j then j = jitter end
    return reply('rate_exceeded', quota_retry_after(w, window, now) + j, n)
  end
end
if conc > 0 and redis.call('HLEN', a) >= conc then
  return reply('concurrency_exceeded', 0, quota_in_window(w, rate, window, now))
end
if rate > 0 then
  redis.call('ZADD', w, S(now), S(redis.call('INCR', K_quota .. ':seq:' .. A_key)))
end
redis.call('HSET', a, A_execution, S(now) .. ':' .. A_token)
redis.call('ZADD', K_buckets, '0', A_id .. ':' .. A_key)
return reply('admitted', 0, quota_in_window(w, rate, window, now))
