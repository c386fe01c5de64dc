-- execution_complete: complete the caller's active execution and, when
-- asked (has_next), claim the worker's next execution of next_lane in the
-- same partition.
-- KEYS: core result history lanes lease_expiry attempt_timeout deadline
-- ARGV: now id source lease_id epoch attempt_id result has_next next_lane next_namespace next_capabilities next_live_capabilities next_scan_limit next_worker_id next_worker_instance_id next_lease_id next_attempt_id next_lease_ttl next_admission_grant_ttl next_inline

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local operator = A_source == 'operator_override'
local f = fence_arg()
local replay, err = check_fenced_op(e, 'complete', operator, f, now)
if err ~= nil then return err end

if not replay then
  if operator then notify_lease(e, 'overridden') end
  end_attempt(e, now, 'ended_success', '', '')
  redis.call('SET', K_result, A_result)
  remove_from_lane(e)
  release_lease(e, now, 'released', 'completed')
  terminate(e, now, 'success')
  record_op(e, 'complete', operator, f)
  -- with a next claim, the job's decrement of "active" waits for the
  -- claimed job's increment (count_hold in lib/record.lua)
  if A_has_next == '1' then count_hold() end
  save_exec(e)
  flow_settle(now)
end
-- a replay claims nothing: a retransmitted request's claim already happened
if A_has_next ~= '1' or replay then return { 'replayed', replay and 1 or 0 } end
-- ExecutionClaimNext's pairs for the next execution, and replayed
local reply = claim_next(A_next_lane, A_next_namespace, A_next_capabilities, A_next_live_capabilities, N(A_next_scan_limit), {
  worker_id = A_next_worker_id,
  wi = A_next_worker_instance_id,
  lease_id = A_next_lease_id,
  attempt_id = A_next_attempt_id,
  ttl = N(A_next_lease_ttl),
  admit_ttl = N(A_next_admission_grant_ttl),
  inline = inline_parse(A_next_inline),
}, now)
count_release()
local n = #reply
reply[n + 1], reply[n + 2] = 'replayed', replay and 1 or 0
return reply
