-- execution_update_progress: record the progress of the caller's attempt.
-- KEYS: core
-- ARGV: now id lease_id epoch attempt_id percent message

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local err = validate_lease(e, fence_arg(), now)
if err ~= nil then return err end
e.progress_pct = N(A_percent)
e.progress_msg = A_message
e.progress_at = now
e.last_mutation_at = now
save_exec(e)
return {}
