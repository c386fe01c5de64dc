-- execution_claim_next: claim the best eligible execution of a lane that the
-- worker can serve, walking at most scan_limit heads; a head no live worker
-- can serve moves to blocked:route; a head that needs admission is claimed
-- when inline (model.InlineAdmission) admits it, and otherwise granted to
-- the worker for admission_grant_ttl and returned instead.
-- KEYS: lanes lease_expiry attempt_timeout
-- ARGV: now lane namespace capabilities live_capabilities scan_limit worker_id worker_instance_id lease_id attempt_id lease_ttl admission_grant_ttl inline

local r = lease_req()
r.admit_ttl = N(A_admission_grant_ttl)
r.inline = inline_parse(A_inline)
return claim_next(A_lane, A_namespace, A_capabilities, A_live_capabilities, N(A_scan_limit), r, now_ms())
