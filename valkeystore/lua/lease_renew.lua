-- lease_renew: extend the caller's lease to now + lease_ttl.
-- KEYS: core lease_expiry
-- ARGV: now id lease_id epoch attempt_id lease_ttl

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local err = validate_lease(e, fence_arg(), now)
if err ~= nil then return err end
local ttl = N(A_lease_ttl)
e.lease_expires_at = now + ttl
e.lease_renew_by = renew_deadline(now, ttl)
e.last_mutation_at = now
redis.call('ZADD', K_lease_expiry, S(e.lease_expires_at), e.id)
save_exec(e)
feed_lease(e, now, 'renewed', '')
return { 'expires_at', e.lease_expires_at, 'renew_by', e.lease_renew_by }
