-- execution_delay: hand the caller's active execution back until
-- delay_until; the same attempt resumes at the next claim.
-- KEYS: core history lanes lease_expiry attempt_timeout
-- ARGV: now id source lease_id epoch attempt_id delay_until

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local operator = A_source == 'operator_override'
local f = fence_arg()
local replay, err = check_fenced_op(e, 'delay', operator, f, now)
if err ~= nil then return err end
if replay then return { 'delay_until', e.op_delay_until, 'replayed', 1 } end

local until_ms = N(A_delay_until)
if operator then notify_lease(e, 'overridden') end
if e.cur_attempt >= 0 then
  redis.call('HSET', attempt_key(e, e.cur_attempt), 'status', 'suspended')
end
remove_from_lane(e)
release_lease(e, now, 'released', 'worker_delay')
make_runnable(e, now, until_ms, 'waiting_for_delay', 'attempt_interrupted')
record_op(e, 'delay', operator, f)
e.op_delay_until = until_ms
save_exec(e)
return { 'delay_until', until_ms, 'replayed', 0 }
