-- execution_block: move an eligible execution into the blocked index of an
-- admission reason.
-- KEYS: core lanes
-- ARGV: now id reason detail

local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase == 'terminal' then return not_active(e) end
if e.lifecycle_phase ~= 'runnable' or e.eligibility_state ~= 'eligible_now' then
  return fail('execution_not_eligible')
end
block(e, now_ms(), A_reason, A_detail)
save_exec(e)
return { 'eligibility_state', e.eligibility_state }
