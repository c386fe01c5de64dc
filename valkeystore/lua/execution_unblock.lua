-- execution_unblock: return a blocked execution to the eligible index when
-- it is still blocked for the expected reason.
-- KEYS: core lanes
-- ARGV: now id expected_reason

local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase ~= 'runnable' or e.eligibility_state ~= block_es(A_expected_reason)
  or e.blocking_reason ~= A_expected_reason then
  return fail('execution_not_eligible')
end
unblock(e, now_ms())
save_exec(e)
return {}
