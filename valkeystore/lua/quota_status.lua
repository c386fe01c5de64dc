-- quota_status: one bucket of a policy as it stands at now.
-- KEYS: quota
-- ARGV: now key

local q = redis.call('HMGET', K_quota, 'rate', 'window', 'jitter', 'concurrency', 'created_at')
if not q[1] then return fail('quota_not_found') end
local rate, window, now = N(q[1]), N(q[2]), now_ms()
local w, a = K_quota .. ':w:' .. A_key, K_quota .. ':a:' .. A_key
local inwin = quota_in_window(w, rate, window, now)
local retry = 0
if rate > 0 and inwin >= rate then retry = quota_retry_after(w, window, now) end
return { 'rate', rate, 'window', window, 'jitter', N(q[3]), 'concurrency', N(q[4]), 'created_at', N(q[5]),
  'in_window', inwin, 'active', redis.call('HLEN', a), 'retry_after', retry }
