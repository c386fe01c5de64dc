-- lease_mark_expired: mark an execution whose lease ran out as reclaimable;
-- drop stale lease-expiry entries.
-- KEYS: core history lanes lease_expiry
-- ARGV: now id

local now = now_ms()
local e = the_exec()
local function status(s) return { 'status', s } end
if e == nil then
  redis.call('ZREM', K_lease_expiry, A_id)
  return status('not_found_cleaned')
end
if e.lifecycle_phase ~= 'active' then
  redis.call('ZREM', K_lease_expiry, A_id)
  return status('not_active_cleaned')
end
if e.ownership_state == 'unowned' then
  redis.call('ZREM', K_lease_expiry, A_id)
  return status('unowned_cleaned')
end
if e.ownership_state == 'lease_expired_reclaimable' then return status('already_expired') end
if e.ownership_state == 'lease_revoked' then return status('already_revoked') end
if e.lease_expires_at > now then return status('not_yet_expired') end
notify_lease(e, 'expired')
set_state(e, now, 'active', 'lease_expired_reclaimable', 'not_applicable', 'waiting_for_worker',
  'none', 'attempt_interrupted')
e.lease_expired_at = now
add_history(e, now, 'expired', '')
close_lost_stream(e, now, 'lease_expired')
save_exec(e)
return status('marked_expired')
