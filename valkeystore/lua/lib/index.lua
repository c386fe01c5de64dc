-- index: the lane indexes
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- bless reports whether a sorts before b in byte order.
local function bless(a, b)
  local la, lb = #a, #b
  local n = la
  if lb < n then n = lb end
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return la < lb
end

-- lex_page reads one page of a sorted set whose members all score 0, in
-- member order: up to limit members from after, a ZRANGEBYLEX start
-- ("(<member>": after it; "": from the beginning), and the last of them
-- as the next cursor when more remain ('' otherwise).
local function lex_page(key, after, limit)
  local from = '-'
  if after ~= '' then from = after end
  local ids = redis.call('ZRANGEBYLEX', key, from, '+', 'LIMIT', '0', S(limit + 1))
  local next_id = ''
  if #ids > limit then
    ids[#ids] = nil
    next_id = ids[#ids]
  end
  return ids, next_id
end

local function eligible_score(e)
  return -e.priority * 1000000000000 + e.created_at
end

-- runnable_index (the lane index of an eligibility state) is generated
-- from model.IndexFor (index_lua.go).

local function remove_route_group(e)
  local csv = e.required_caps
  local g = route_key(e.lane, e.ns, csv)
  redis.call('ZREM', g, e.id)
  if redis.call('ZCARD', g) == 0 then
    redis.call('ZREM', lane_key(e.lane, 'route_groups'), route_member(e.ns, csv))
  end
end

-- remove_from_lane removes e from whichever lane index its state puts it in.
-- The active index of a lane is the records' phase (see keys.go): there is
-- nothing to remove for an active execution.
local function remove_from_lane(e)
  local lp = e.lifecycle_phase
  if lp == 'runnable' then
    local name = runnable_index(e.eligibility_state)
    if name ~= nil then redis.call('ZREM', lane_key(e.lane, name), e.id) end
    local es = e.eligibility_state
    if es == 'blocked_by_route' then
      remove_route_group(e)
    elseif es == 'blocked_by_budget' then
      -- (a record blocked before layout v3 is in no group)
      if e.blocked_budget ~= '' then
        adm_group('leave', e.lane, 'b', e.blocked_budget, '', e.id)
        e.blocked_budget = ''
      end
    elseif es == 'blocked_by_quota' then
      if e.quota ~= '' then adm_group('leave', e.lane, 'q', e.quota, e.quota_key, e.id) end
    end
  elseif lp == 'suspended' then
    -- the suspended phase's indexes: the lane's, the partition's list and
    -- the suspension timeouts
    redis.call('ZREM', lane_key(e.lane, 'suspended'), e.id)
    redis.call('ZREM', ks().idx .. 'suspended', e.id)
    redis.call('ZREM', ks().idx .. 'suspension_timeout', e.id)
  elseif lp == 'terminal' then
    redis.call('ZREM', lane_key(e.lane, 'terminal'), e.id)
    redis.call('ZREM', ks().idx .. 'retention', e.id)
  end
end

local function add_eligible(e)
  redis.call('ZADD', lane_key(e.lane, 'eligible'), S(eligible_score(e)), e.id)
  redis.call('PUBLISH', work_channel(e.lane), e.id)
end

-- make_runnable sets e runnable, eligible now or delayed until delay_until,
-- and indexes it; e is already out of its previous lane index.
local function make_runnable(e, now, delay_until, delay_reason, as)
  if delay_until > now then
    set_state(e, now, 'runnable', 'unowned', 'not_eligible_until_time', delay_reason, 'none', as)
    e.delay_until = delay_until
    redis.call('ZADD', lane_key(e.lane, 'delayed'), S(delay_until), e.id)
    return
  end
  set_state(e, now, 'runnable', 'unowned', 'eligible_now', 'waiting_for_worker', 'none', as)
  e.delay_until = 0
  add_eligible(e)
end

-- release_lease drops the lease and its timer entries; the caller has taken
-- e out of its lane index (remove_from_lane) where it has one. The active
-- period ends, so a reclaim grant issued during it goes too. The
-- instance's lease index is the record's lease (see keys.go), so it goes
-- with clear_lease. The quota admission the lease held (adm_token) moves
-- to the partition's quota release outbox, I:quota_outbox (ZSET, score the
-- time, member "<execution>\t<token>": QuotaReleasePending's order) and
-- I:quota_outbox:data (member → "<quota>\t<key>"), unless keep_token
-- (execution_reclaim: the new lease inherits it). An execution without
-- budgets or a quota pays one comparison.
local function release_lease(e, now, kind, reason, keep_token)
  add_history(e, now, kind, reason)
  clear_grant(e)
  redis.call('ZREM', K_lease_expiry, e.id)
  -- an execution is in attempt_timeout exactly while timeout_at is set
  if e.timeout_at ~= 0 then redis.call('ZREM', K_attempt_timeout, e.id) end
  clear_lease(e)
  e.timeout_at = 0
  if e.adm ~= 0 and not keep_token and e.adm_token ~= '' then
    local m = e.id .. '\t' .. e.adm_token
    redis.call('ZADD', ks().idx .. 'quota_outbox', S(now), m)
    redis.call('HSET', ks().idx .. 'quota_outbox:data', m, e.quota .. '\t' .. e.quota_key)
    e.adm_token = ''
  end
end

-- ended lists the executions terminate ended in this script; a script
-- that can end one calls flow_settle (flow.lua) after saving it, which
-- resolves the edges of those that are flow members.
local ended = {}

-- terminate makes e terminal; its lease is released and it is out of its
-- runnable index. What it holds open (a suspension, waitpoints) closes; the
-- record says whether there is any (wait.lua). The completions feed
-- (feed.lua) gets the outcome.
local function terminate(e, now, to)
  if e.wp_open ~= 0 or e.lifecycle_phase == 'suspended' then wait_kit().ends(e, now, to) end
  local as = 'attempt_terminal'
  if e.total_attempts == 0 then as = 'none' end
  set_state(e, now, 'terminal', 'unowned', 'not_applicable', 'none', to, as)
  e.terminal_at = now
  e.delay_until = 0
  clear_pending(e)
  clear_grant(e)
  -- only an execution with a deadline is in the deadline index
  if e.deadline ~= 0 then redis.call('ZREM', K_deadline, e.id) end
  if e.timeout_at ~= 0 then redis.call('ZREM', K_attempt_timeout, e.id) end
  redis.call('ZADD', lane_key(e.lane, 'terminal'), S(now), e.id)
  -- retention (execution_delete.lua): a completion reads a hot field only
  local keep = e.ret_ok
  if to ~= 'success' then
    keep = e.ret_cancelled
    if to == 'failed' or to == 'expired' then keep = e.ret_failed end
  end
  if keep > 0 then redis.call('ZADD', ks().idx .. 'retention', S(now + keep), e.id) end
  feed_completion(e, now, to)
  ended[#ended + 1] = e
end

-- cancel_exec ends a non-terminal e cancelled with reason, by by
-- (cancelled_by); notify tells an active holder that its lease is gone. It
-- returns e's phase before.
local function cancel_exec(e, now, reason, by, notify)
  local prior = e.lifecycle_phase
  remove_from_lane(e)
  if prior == 'active' then
    if notify then notify_lease(e, 'cancelled') end
    release_lease(e, now, 'cancelled', reason)
  end
  end_attempt(e, now, 'ended_cancelled', reason, '')
  terminate(e, now, 'cancelled')
  e.cancellation_reason = reason
  e.cancelled_by = by
  return prior
end

-- retention_keep is e's retention (ms) for outcome to; 0: kept for good.
local function retention_keep(e, to)
  local f = retention_field(to)
  if f == 'ret_ok' then return e.ret_ok end
  if f == 'ret_failed' then return e.ret_failed end
  if f == 'ret_cancelled' then return e.ret_cancelled end
  return 0
end

-- pending_expiry is the earliest expiry of e's pending waitpoints (0:
-- none), its pending_waitpoint_expiry score, read as wait_kit's
-- expiry_sync reads it (which files it).
local function pending_expiry(e)
  local next_at = 0
  for _, wp in ipairs(redis.call('ZRANGE', e.k.base .. ':wps', '0', '-1')) do
    local w = redis.call('HMGET', ks().pfx .. ':wp:' .. ks().tag .. ':' .. wp, 'state', 'expires_at')
    if w[1] == 'pending' then
      local at = N(w[2])
      if next_at == 0 or at < next_at then next_at = at end
    end
  end
  return next_at
end

-- expected_indexes maps each stored index e belongs in, named as
-- ExecutionIndexes names it, to { score, scored }: scored says the score
-- follows from the record and is checked, otherwise only membership is
-- (a missing entry is filed with that score). It is model.ExpectedIndexes
-- (memstore's derivation) for the indexes valkeystore stores, built from
-- the same pieces the filing helpers above use: lane_index (generated from
-- model.LaneIndexFor), eligible_score, retention_keep (its field from
-- retention_field, generated from model.Retention.For). index_repair.lua is its user.
local function expected_indexes(e)
  local w = { all_executions = { 0, true } }
  local lp = e.lifecycle_phase
  local lane = 'lane:' .. e.lane .. ':'
  local name = lane_index(lp, e.eligibility_state)
  if lp == 'runnable' then
    if name == 'eligible' then
      w[lane .. name] = { eligible_score(e), true }
    elseif name == 'delayed' then
      w[lane .. name] = { e.delay_until, true }
    elseif name ~= nil then
      -- a blocked index's score is the block time, which the record
      -- does not keep apart from its last transition
      w[lane .. name] = { e.last_transition_at, false }
    end
  elseif lp == 'active' then
    -- (its lane's active index is the record: see keys.go)
    local exp = e.lease_expires_at
    if e.ownership_state == 'lease_revoked' then exp = e.lease_revoked_at end
    w.lease_expiry = { exp, true }
    if e.timeout_at ~= 0 then w.attempt_timeout = { e.timeout_at, true } end
  elseif lp == 'suspended' then
    local t = N(redis.call('HGET', e.k.base .. ':susp', 'timeout_at'))
    local score = t
    if score == 0 then score = SUSPENDED_NO_TIMEOUT end
    w[lane .. name] = { score, true }
    w.suspended = { 0, true }
    if t ~= 0 then w.suspension_timeout = { t, true } end
  elseif lp == 'terminal' then
    w[lane .. name] = { e.terminal_at, true }
    local keep = retention_keep(e, e.terminal_outcome)
    if keep > 0 then w.retention = { e.terminal_at + keep, true } end
  end
  if e.deadline ~= 0 and lp ~= 'terminal' then w.execution_deadline = { e.deadline, true } end
  local pe = pending_expiry(e)
  if pe ~= 0 then w.pending_waitpoint_expiry = { pe, true } end
  return w
end
