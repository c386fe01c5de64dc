-- execution_fail: fail the caller's current attempt; retry it when the
-- policy and the category allow.
-- KEYS: core history lanes lease_expiry attempt_timeout deadline
-- ARGV: now id source lease_id epoch attempt_id reason category retryable

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local operator = A_source == 'operator_override'
local f = fence_arg()
local replay, err = check_fenced_op(e, 'fail', operator, f, now)
if err ~= nil then return err end
if replay then
  return { 'outcome', e.op_fail_result, 'delay_until', e.op_delay_until, 'replayed', 1 }
end

local cat = A_category
if operator then notify_lease(e, 'overridden') end
end_attempt(e, now, 'ended_failure', A_reason, cat)
remove_from_lane(e)
release_lease(e, now, 'released', 'failed')
local outcome, until_ms = fail_or_retry(e, now, A_reason, cat, A_retryable == '1')
record_op(e, 'fail', operator, f)
e.op_fail_result, e.op_delay_until = outcome, until_ms
save_exec(e)
flow_settle(now)
return { 'outcome', outcome, 'delay_until', until_ms, 'replayed', 0 }
