-- execution_complete: complete the caller's active execution.
-- KEYS: core result history lanes lease_expiry attempt_timeout deadline lease_workers
-- ARGV: now id source lease_id epoch attempt_id result

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local operator = A.source == 'operator_override'
local f = fence_arg()
local replay, err = check_fenced_op(e, 'complete', operator, f, now)
if err ~= nil then return err end
if replay then return ok({ replayed = true }) end

end_attempt(e, now, 'ended_success', '', '')
redis.call('SET', K.result, A.result)
remove_from_lane(e)
release_lease(e, now, 'released', 'completed')
terminate(e, now, 'success')
record_op(e, 'complete', operator, f)
save_exec(e)
return ok({ replayed = false })
