-- reclaim_grant_issue: grant one worker the right to reclaim an active
-- execution whose lease expired or was revoked.
-- KEYS: core
-- ARGV: now id worker_id worker_instance_id capabilities grant_ttl

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
if not reclaimable(e) then return fail('execution_not_reclaimable') end
if grant_live(e, now) then return fail('grant_already_exists') end
local missing = missing_caps(e.required_caps, A_capabilities)
if missing ~= '' then return fail('capability_mismatch', missing) end
e.grant_kind, e.grant_worker_id, e.grant_wi = 'reclaim', A_worker_id, A_worker_instance_id
e.grant_created_at = now
e.grant_expires_at = now + N(A_grant_ttl)
e.last_mutation_at = now
save_exec(e)
return { 'expires_at', e.grant_expires_at }
