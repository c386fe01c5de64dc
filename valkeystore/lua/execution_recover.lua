-- execution_recover: return an active execution whose lease expired or was
-- revoked to the eligible index as a pending reclaim attempt, or fail it
-- when its reclaims are used up.
-- KEYS: core history lanes lease_expiry attempt_timeout deadline
-- ARGV: now id

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
if not reclaimable(e) then return fail('execution_not_reclaimable') end
if reclaim_cap_reached(e, now) then
  flow_settle(now)
  return { 'status', 'reclaim_cap_exceeded' }
end

local reason = 'lease_expired'
if e.ownership_state == 'lease_revoked' then reason = 'lease_revoked' end
end_attempt(e, now, 'interrupted_reclaimed', reason, 'infra_crash')
remove_from_lane(e)
release_lease(e, now, 'recovered', reason)
clear_grant(e)
e.reclaim_count = e.reclaim_count + 1
set_pending(e, 'reclaim', reason, '')
make_runnable(e, now, 0, 'waiting_for_worker', 'pending_retry_attempt')
save_exec(e)
return { 'status', 'requeued' }
