-- quota_create: create a quota policy on its quota partition, or find it
-- created with the same limits (another is an idempotency conflict).
-- KEYS: quota quotas
-- ARGV: now id rate window jitter concurrency

local cur = redis.call('HMGET', K_quota, 'rate', 'window', 'jitter', 'concurrency')
if cur[1] then
  if cur[1] ~= A_rate or cur[2] ~= A_window or cur[3] ~= A_jitter or cur[4] ~= A_concurrency then
    return fail('idempotency_key_conflict')
  end
  return { 'created', 0 }
end
redis.call('HSET', K_quota, 'rate', A_rate, 'window', A_window, 'jitter', A_jitter,
  'concurrency', A_concurrency, 'created_at', S(now_ms()))
redis.call('ZADD', K_quotas, '0', A_id)
return { 'created', 1 }
