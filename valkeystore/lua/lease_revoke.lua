-- lease_revoke: take the lease away from its holder; the execution becomes
-- reclaimable and its lease-expiry entry moves to now so recovery finds it.
-- KEYS: core history lanes lease_expiry
-- ARGV: now id expected_lease_id reason

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase ~= 'active' then return not_active(e) end
if e.ownership_state == 'lease_revoked' then
  return { 'status', 'already_revoked', 'lease_id', '', 'epoch', e.epoch }
end
if e.ownership_state == 'lease_expired_reclaimable' then
  return { 'status', 'already_expired', 'lease_id', e.lease_id, 'epoch', e.epoch }
end
if e.ownership_state ~= 'leased' or e.lease_id == '' then return fail('no_active_lease') end
if A_expected_lease_id ~= '' and A_expected_lease_id ~= e.lease_id then return fail('stale_lease') end

local old = e.lease_id
add_history(e, now, 'revoked', A_reason)
close_lost_stream(e, now, 'lease_revoked')
notify_lease(e, 'revoked')
clear_lease(e)
redis.call('ZADD', K_lease_expiry, S(now), e.id)
set_state(e, now, 'active', 'lease_revoked', 'not_applicable', 'waiting_for_worker', 'none',
  'attempt_interrupted')
e.lease_revoked_at = now
e.revoke_reason = A_reason
save_exec(e)
return { 'status', 'revoked', 'lease_id', old, 'epoch', e.epoch }
