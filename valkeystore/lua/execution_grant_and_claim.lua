-- execution_grant_and_claim: check capabilities and claim in one step (an
-- execution with a quota needs the admission token its lease will hold).
-- KEYS: core payload tags history lanes lease_expiry attempt_timeout
-- ARGV: now id capabilities worker_id worker_instance_id lease_id attempt_id lease_ttl admission_token

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase ~= 'runnable' or e.terminal_outcome ~= 'none' then
  return fail('execution_not_eligible')
end
if e.ownership_state ~= 'unowned' then return fail('lease_conflict') end
if e.attempt_state == 'running_attempt' then return fail('active_attempt_exists') end
if grant_live(e, now) then return fail('grant_already_exists') end
if e.eligibility_state ~= 'eligible_now' then return fail('execution_not_eligible') end
if not redis.call('ZSCORE', lane_key(e.lane, 'eligible'), e.id) then
  return fail('execution_not_in_eligible_set')
end
local missing = missing_caps(e.required_caps, A_capabilities)
if missing ~= '' then return fail('capability_mismatch', missing) end
if lane_paused(e.lane) then return fail('lane_paused') end
local r = lease_req()
r.token = A_admission_token
local err = check_admission(e, r)
if err ~= nil then return err end
return claim(e, r, now)
