-- execution_resume: an operator resumes a suspended execution whatever
-- its condition (model.ExecutionResumeParams).
-- KEYS: core lanes
-- ARGV: now id

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase ~= 'suspended' then return fail('execution_not_suspended') end
local until_ms = susp_resume(e, now, 'operator')
save_exec(e)
return { 'state', vector(e), 'delay_until', until_ms }
