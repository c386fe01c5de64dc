-- recovery: reclaiming an execution whose lease lapsed
--
-- Part of the library put in front of the scripts: see lua/README.md.

local function reclaimable(e)
  return e.lifecycle_phase == 'active'
    and (e.ownership_state == 'lease_expired_reclaimable' or e.ownership_state == 'lease_revoked')
end

-- reclaim_cap_reached fails e terminally (and saves it) when its recoveries
-- are used up.
local function reclaim_cap_reached(e, now)
  if e.reclaim_count < e.max_reclaims then return false end
  local reason = 'max_reclaims_exceeded'
  end_attempt(e, now, 'interrupted_reclaimed', reason, 'infra_crash')
  remove_from_lane(e)
  release_lease(e, now, 'released', reason)
  e.failure_reason = reason
  e.failure_category = 'infra_crash'
  terminate(e, now, 'failed')
  save_exec(e)
  return true
end
