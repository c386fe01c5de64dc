-- claim_grant_issue: grant one worker the right to claim an eligible
-- execution; the execution stays eligible and an unused grant lapses.
-- KEYS: core lanes
-- ARGV: now id worker_id worker_instance_id capabilities grant_ttl

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase ~= 'runnable' or e.eligibility_state ~= 'eligible_now' then
  return fail('execution_not_eligible')
end
if grant_live(e, now) then return fail('grant_already_exists') end
if not redis.call('ZSCORE', lane_key(e.lane, 'eligible'), e.id) then
  return fail('execution_not_in_eligible_set')
end
local missing = missing_caps(e.required_caps, A_capabilities)
if missing ~= '' then return fail('capability_mismatch', missing) end
e.grant_kind, e.grant_worker_id, e.grant_wi = 'claim', A_worker_id, A_worker_instance_id
e.grant_created_at = now
e.grant_expires_at = now + N(A_grant_ttl)
e.last_mutation_at = now
save_exec(e)
return { 'expires_at', e.grant_expires_at }
