-- execution_cancel: cancel a non-terminal execution; a worker cancels its
-- own active execution with its fence, an operator anything without one.
-- KEYS: core history lanes lease_expiry attempt_timeout deadline
-- ARGV: now id source lease_id epoch attempt_id reason

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local operator = A_source == 'operator_override'
local f = fence_arg()
if e.lifecycle_phase == 'terminal' and op_matches(e, 'cancel', operator, f) then
  return { 'prior_phase', e.op_prior_phase, 'replayed', 1 }
end
if not operator then
  local err = validate_lease(e, f, now)
  if err ~= nil then return err end
elseif e.lifecycle_phase == 'terminal' then
  return not_active(e)
end

local by = 'worker'
if operator then by = 'operator_override' end
local prior = cancel_exec(e, now, A_reason, by, operator)
record_op(e, 'cancel', operator, f)
e.op_prior_phase = prior
save_exec(e)
flow_settle(now)
return { 'prior_phase', prior, 'replayed', 0 }
