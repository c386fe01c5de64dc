-- execution_expire: expire an execution whose attempt timeout or deadline
-- has passed; an attempt timeout retries when the policy allows. Stale
-- index entries are dropped.
-- KEYS: core history lanes lease_expiry attempt_timeout deadline
-- ARGV: now id reason

local now = now_ms()
local idx = K_deadline
if A_reason == 'attempt_timeout' then idx = K_attempt_timeout end
local e = the_exec()
if e == nil then
  redis.call('ZREM', idx, A_id)
  return { 'status', 'not_found_cleaned', 'prior_phase', '', 'delay_until', 0 }
end
if e.lifecycle_phase == 'terminal' then
  redis.call('ZREM', idx, A_id)
  return { 'status', 'already_terminal', 'prior_phase', e.lifecycle_phase, 'delay_until', 0 }
end
local prior = e.lifecycle_phase

if A_reason == 'attempt_timeout' then
  if e.lifecycle_phase ~= 'active' or e.timeout_at == 0 then
    redis.call('ZREM', idx, A_id)
    return { 'status', 'not_active_cleaned', 'prior_phase', prior, 'delay_until', 0 }
  end
  if e.timeout_at > now then
    return { 'status', 'not_yet_due', 'prior_phase', prior, 'delay_until', 0 }
  end
  local reason = 'attempt_timeout'
  notify_lease(e, 'timed_out')
  end_attempt(e, now, 'ended_failure', reason, 'timeout')
  remove_from_lane(e)
  release_lease(e, now, 'released', reason)
  if e.retry_count < e.retry_max then
    local _, until_ms = fail_or_retry(e, now, reason, 'timeout', true)
    save_exec(e)
    return { 'status', 'retry_scheduled', 'prior_phase', prior, 'delay_until', until_ms }
  end
  e.failure_reason = reason
  e.failure_category = 'timeout'
  terminate(e, now, 'expired')
  save_exec(e)
  flow_settle(now)
  return { 'status', 'expired', 'prior_phase', prior, 'delay_until', 0 }
end

if e.deadline == 0 then
  redis.call('ZREM', idx, A_id)
  return { 'status', 'not_active_cleaned', 'prior_phase', prior, 'delay_until', 0 }
end
if e.deadline > now then
  return { 'status', 'not_yet_due', 'prior_phase', prior, 'delay_until', 0 }
end
local reason = 'execution_deadline'
remove_from_lane(e)
if prior == 'active' then
  notify_lease(e, 'timed_out')
  release_lease(e, now, 'released', reason)
end
end_attempt(e, now, 'ended_failure', reason, 'timeout')
e.failure_reason = reason
e.failure_category = 'timeout'
terminate(e, now, 'expired')
save_exec(e)
flow_settle(now)
return { 'status', 'expired', 'prior_phase', prior, 'delay_until', 0 }
