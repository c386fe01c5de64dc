-- execution_claim: consume the caller's claim grant and start (or resume)
-- an attempt under a new lease; an execution with a quota needs the
-- admission token its lease will hold.
-- KEYS: core payload tags history lanes lease_expiry attempt_timeout
-- ARGV: now id capabilities worker_id worker_instance_id lease_id attempt_id lease_ttl admission_token

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local err = check_claimable(e)
if err ~= nil then return err end
err = check_grant(e, 'claim', A_worker_id, A_worker_instance_id, A_capabilities, now)
if err ~= nil then return err end
if lane_paused(e.lane) then return fail('lane_paused') end
local r = lease_req()
r.token = A_admission_token
err = check_admission(e, r)
if err ~= nil then return err end
return claim(e, r, now)
