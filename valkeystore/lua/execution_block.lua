-- execution_block: move an eligible execution into the blocked index of an
-- admission reason; a block on a budget (budget) or on the execution's
-- quota (it must have one) joins that blocked group.
-- KEYS: core lanes
-- ARGV: now id reason detail budget

local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase == 'terminal' then return not_active(e) end
if e.lifecycle_phase ~= 'runnable' or e.eligibility_state ~= 'eligible_now' then
  return fail('execution_not_eligible')
end
if A_reason == 'waiting_for_quota' and (e.adm == 0 or e.quota == '') then
  return fail('invalid_blocking_reason', 'execution_has_no_quota', 'Reason')
end
block(e, now_ms(), A_reason, A_detail, A_budget)
save_exec(e)
return { 'eligibility_state', e.eligibility_state }
