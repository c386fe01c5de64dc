-- execution_claim_next: claim the best eligible execution of a lane that the
-- worker can serve, walking at most scan_limit heads; a head no live worker
-- can serve moves to blocked:route.
-- KEYS: lanes lease_expiry attempt_timeout
-- ARGV: now lane namespace capabilities live_capabilities scan_limit worker_id worker_instance_id lease_id attempt_id lease_ttl

return claim_next(A_lane, A_namespace, A_capabilities, A_live_capabilities, N(A_scan_limit), lease_req(), now_ms())
