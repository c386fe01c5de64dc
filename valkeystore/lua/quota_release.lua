-- quota_release: delete an execution's admission in a bucket when it holds
-- one and token is '' or the admission's.
-- KEYS: quota
-- ARGV: now id key execution token

if redis.call('EXISTS', K_quota) == 0 then return fail('quota_not_found') end
local a = K_quota .. ':a:' .. A_key
local cur = redis.call('HGET', a, A_execution)
if not cur then return { 'released', 0 } end
if A_token ~= '' and string.sub(cur, string.find(cur, ':', 1, true) + 1) ~= A_token then
  return { 'released', 0 }
end
redis.call('HDEL', a, A_execution)
return { 'released', 1 }
