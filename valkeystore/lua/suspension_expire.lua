-- suspension_expire: apply the timeout behaviour of a suspension whose
-- timeout passed (model.SuspensionExpireParams): fail, cancel or expire
-- the execution, resume it, or leave it for an operator. A stale index
-- entry is dropped.
-- KEYS: core lanes lease_expiry deadline attempt_timeout susp_timeout
-- ARGV: now id

local now = now_ms()
local function out(s, until_ms) return { 'outcome', s, 'delay_until', until_ms or 0 } end
local e = the_exec()
if e == nil then
  redis.call('ZREM', K_susp_timeout, A_id)
  return out('not_found_cleaned')
end
local sk = e.k.base .. ':susp'
local s = redis.call('HMGET', sk, 'timeout_at', 'behavior')
local timeout_at = N(s[1])
if e.lifecycle_phase ~= 'suspended' or timeout_at == 0 then
  redis.call('ZREM', K_susp_timeout, A_id)
  return out('not_suspended_cleaned')
end
if timeout_at > now then return out('not_yet_due') end

local b = s[2]
if b == 'auto_resume' then
  local until_ms = susp_resume(e, now, 'timeout_resume')
  save_exec(e)
  return out('auto_resumed', until_ms)
end
if b == 'escalate' then
  -- suspended for an operator, without a timeout; a signal that satisfies
  -- the condition still resumes it
  redis.call('HSET', sk, 'reason', 'operator_review', 'timeout_at', '0', 'escalated', '1')
  redis.call('ZREM', K_susp_timeout, e.id)
  redis.call('ZADD', lane_key(e.lane, 'suspended'), '9999999999999', e.id)
  set_state(e, now, 'suspended', 'unowned', 'not_applicable', 'paused_by_operator', 'none', 'attempt_interrupted')
  save_exec(e)
  return out('escalated')
end
local reason = 'suspension_timeout'
local outcome
if b == 'cancel' then
  susp_close(e, now, 'timeout_cancel', false)
  cancel_exec(e, now, reason, 'suspension_timeout', false)
  outcome = 'cancelled'
else
  local to, by = 'failed', 'timeout_fail'
  outcome = 'failed'
  if b == 'expire' then to, by, outcome = 'expired', 'timeout_expire', 'expired' end
  susp_close(e, now, by, false)
  end_attempt(e, now, 'ended_failure', reason, 'timeout')
  remove_from_lane(e)
  e.failure_reason = reason
  e.failure_category = 'timeout'
  terminate(e, now, to)
end
save_exec(e)
flow_settle(now)
return out(outcome)
