-- fence: fences, and replays of the last operation
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- fence_arg is the caller's fence from ARGV.
local function fence_arg()
  return { lease_id = A_lease_id, epoch = A_epoch, attempt_id = A_attempt_id }
end

local function fence_matches(e, f)
  return e.lease_id == f.lease_id and S(e.epoch) == f.epoch and e.cur_attempt_id == f.attempt_id
end

-- validate_lease is the spec's VL: phase, revoked, expired, then identity.
local function validate_lease(e, f, now)
  if e.lifecycle_phase ~= 'active' then return not_active(e) end
  if e.ownership_state == 'lease_revoked' then return fail('lease_revoked') end
  if e.ownership_state == 'lease_expired_reclaimable' or e.lease_id == '' or e.lease_expires_at <= now then
    return fail('lease_expired')
  end
  if not fence_matches(e, f) then return fail('stale_lease') end
  return nil
end

-- op_matches reports whether the last replayable operation was kind by the
-- same caller.
local function op_matches(e, kind, operator, f)
  if e.op_kind ~= kind then return false end
  if operator then return e.op_operator == '1' end
  return e.op_operator ~= '1' and e.op_fence_lease == f.lease_id and e.op_fence_epoch == f.epoch
    and e.op_fence_attempt == f.attempt_id
end

-- record_op records the operation; its results (cold) are set by the
-- caller, and only fail, delay and cancel set them, so only those leave
-- any to clear.
local function record_op(e, kind, operator, f)
  local prev = e.op_kind
  if prev == 'fail' or prev == 'delay' or prev == 'cancel' then
    e.op_fail_result, e.op_delay_until, e.op_prior_phase = '', 0, ''
  end
  e.op_kind = kind
  e.op_operator = operator and '1' or '0'
  e.op_fence_lease, e.op_fence_epoch, e.op_fence_attempt = f.lease_id, f.epoch, f.attempt_id
end

local function clear_op(e)
  e.op_kind, e.op_operator, e.op_fence_lease, e.op_fence_epoch = '', '', '', ''
  e.op_fence_attempt, e.op_fail_result, e.op_prior_phase = '', '', ''
  e.op_delay_until = 0
end

-- check_fenced_op is the common front of complete, fail and delay. It
-- returns (true, nil) for a replay of the same worker's operation, or
-- (false, err) when the operation is refused.
local function check_fenced_op(e, kind, operator, f, now)
  if not operator and op_matches(e, kind, operator, f) then return true, nil end
  if operator then
    if e.lifecycle_phase ~= 'active' then return false, not_active(e) end
    return false, nil
  end
  return false, validate_lease(e, f, now)
end
