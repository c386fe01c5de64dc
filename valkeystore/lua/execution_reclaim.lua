-- execution_reclaim: consume a reclaim grant; the old attempt ends
-- interrupted and a reclaim attempt starts under a new lease, or the
-- execution fails when its reclaims are used up.
-- KEYS: core payload tags history lanes lease_expiry attempt_timeout deadline
-- ARGV: now id capabilities worker_id worker_instance_id lease_id attempt_id lease_ttl

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
if not reclaimable(e) then return fail('execution_not_reclaimable') end
local err = check_grant(e, 'reclaim', A_worker_id, A_worker_instance_id, A_capabilities, now)
if err ~= nil then return err end
if lane_paused(e.lane) then return fail('lane_paused') end
if reclaim_cap_reached(e, now) then
  flow_settle(now)
  return { 'status', 'reclaim_cap_exceeded' }
end

end_attempt(e, now, 'interrupted_reclaimed', '', '')
remove_from_lane(e)
-- the new lease inherits the old one's quota admission (adm_token)
release_lease(e, now, 'reclaimed', '', true)
e.reclaim_count = e.reclaim_count + 1
set_pending(e, 'reclaim', '', '')
e.attempt_state = 'pending_retry_attempt'
local reply = claim(e, lease_req(), now)
local n = #reply
reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] = 'status', 'claimed', 'claimed', 1
return reply
