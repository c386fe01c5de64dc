-- state: the state vector and the fields set and cleared with it
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- blocked_index and BLOCKED_NAMES (the blocked indexes) are generated from
-- model.IndexFor (index_lua.go).

-- block_es maps an admission blocking reason to its eligibility state (nil
-- for any other reason).
local function block_es(reason)
  if reason == 'waiting_for_capable_worker' then return 'blocked_by_route' end
  if reason == 'waiting_for_budget' then return 'blocked_by_budget' end
  if reason == 'waiting_for_quota' then return 'blocked_by_quota' end
  if reason == 'paused_by_operator' then return 'blocked_by_operator' end
  if reason == 'paused_by_policy' then return 'blocked_by_lane_state' end
  return nil
end

-- set_state writes all seven dimensions and stamps the transition.
local function set_state(e, now, lp, os, es, br, to, as)
  e.lifecycle_phase, e.ownership_state, e.eligibility_state = lp, os, es
  e.blocking_reason, e.terminal_outcome, e.attempt_state = br, to, as
  e.blocking_detail = ''
  e.last_transition_at = now
  e.last_mutation_at = now
end

-- vector is the state vector as name/value pairs.
local function vector(e)
  return {
    'lifecycle_phase', e.lifecycle_phase,
    'ownership_state', e.ownership_state,
    'eligibility_state', e.eligibility_state,
    'blocking_reason', e.blocking_reason,
    'blocking_detail', e.blocking_detail,
    'terminal_outcome', e.terminal_outcome,
    'attempt_state', e.attempt_state,
  }
end

local function not_active(e)
  return {
    'err', 'execution_not_active', 'detail', '', 'field', '',
    'state', {
      'lifecycle_phase', e.lifecycle_phase,
      'terminal_outcome', e.terminal_outcome,
      'lease_epoch', e.epoch,
      'attempt_id', e.cur_attempt_id,
    },
  }
end

local function grant_live(e, now)
  return e.grant_kind ~= '' and e.grant_expires_at >= now
end

-- clear_grant drops the grant; the other grant fields (cold) are set and
-- cleared with grant_kind, so there is nothing to clear without one.
local function clear_grant(e)
  if e.grant_kind == '' then return end
  e.grant_kind, e.grant_worker_id, e.grant_wi = '', '', ''
  e.grant_created_at, e.grant_expires_at = 0, 0
end

-- clear_pending drops the pending attempt; as with grants, the cold fields
-- go with pending_type.
local function clear_pending(e)
  if e.pending_type == '' then return end
  e.pending_type, e.pending_reason, e.pending_requested_by = '', '', ''
  e.pending_prev_index = 0
end

local function set_pending(e, typ, reason, requested_by)
  e.pending_type, e.pending_reason, e.pending_requested_by = typ, reason, requested_by
  e.pending_prev_index = e.cur_attempt
end

-- notify_lease tells the holder of e's lease that someone else took it
-- ("<kind>|<epoch>|<id>" on P:lease:<instance>, lease_notify.go). Call it
-- before the lease is cleared; the holder's own operations never call it.
local function notify_lease(e, kind)
  if e.lease_wi == '' then return end
  redis.call('PUBLISH', lease_channel(e.lease_wi), kind .. '|' .. S(e.epoch) .. '|' .. e.id)
end

local function clear_lease(e)
  e.lease_id, e.lease_worker_id, e.lease_wi = '', '', ''
  e.lease_acquired_at, e.lease_expires_at, e.lease_renew_by = 0, 0, 0
end
