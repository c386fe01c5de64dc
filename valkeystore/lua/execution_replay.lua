-- execution_replay: make a terminal execution runnable again with a new
-- attempt of type replay.
-- KEYS: core result history lanes deadline attempt_timeout lease_expiry
-- ARGV: now id reason requested_by

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
if e.lifecycle_phase ~= 'terminal' then return fail('execution_not_terminal') end
if e.replay_count >= e.max_replays then return fail('max_replays_exhausted') end

remove_from_lane(e)
e.replay_count = e.replay_count + 1
e.retry_count = 0
e.reclaim_count = 0
e.terminal_at = 0
e.failure_reason, e.failure_category = '', ''
e.cancellation_reason, e.cancelled_by = '', ''
redis.call('DEL', K_result)
clear_op(e)
set_pending(e, 'replay', A_reason, A_requested_by)
if e.deadline > now then
  redis.call('ZADD', K_deadline, S(e.deadline), e.id)
else
  e.deadline = 0
end
add_history(e, now, 'replay_initiated', A_reason)
-- a flow member may be held again (the kit's replayed saves it, and may
-- decide its group: reload it)
if flow_kit().replayed(e, now, 'pending_replay_attempt') then
  flow_settle(now)
  e = the_exec()
else
  make_runnable(e, now, 0, 'waiting_for_worker', 'pending_replay_attempt')
  save_exec(e)
end
return { 'state', vector(e) }
