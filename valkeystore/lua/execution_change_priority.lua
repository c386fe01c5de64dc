-- execution_change_priority: change the priority of a non-terminal
-- execution; an eligible one is re-ordered at once.
-- KEYS: core lanes
-- ARGV: now id priority

local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase == 'terminal' then return fail('execution_not_eligible') end
local old = e.priority
e.priority = N(A_priority)
e.last_mutation_at = now_ms()
if e.lifecycle_phase == 'runnable' and e.eligibility_state == 'eligible_now' then
  redis.call('ZADD', lane_key(e.lane, 'eligible'), S(eligible_score(e)), e.id)
end
save_exec(e)
return { 'old', old, 'new', e.priority }
