-- lib.lua: helpers shared by every script. The store builds each script as
--   the definitions it uses (directly or not), those generated from
--   record.go (REC_*, rec_*, LEASE_HISTORY) first, then lib.lua's
--   .. <script>.lua
-- so these functions are locals of every script's main chunk. It rewrites
-- three kinds of names (rewrite.go): e.<field> becomes the field's place in
-- a decoded record (e[1][i], e[2][i] or rec_cold(e)[1|2][i], see record.go),
-- so a variable named e always holds a record; K.<key> and A.<arg> become
-- KEYS[i] and ARGV[i] of the script's declaration. A definition starts at a
-- line beginning with "local " and ends before the next one; it may only
-- use definitions above it. Keys of the execution partition are reached
-- through K (declared keys) or derived from K.lanes (per-lane keys) and from
-- an execution's core key (its other keys), so every key shares the
-- script's hash tag.
--
-- Rules that keep both stores and every server identical:
--   * numbers go to Redis commands and into records only as decimal text
--     printed by string.format('%d') (S()); tostring() and cjson never print
--     a number (Lua 5.1 and cjson keep 14 digits). Replies carry numbers as
--     Lua numbers (integer replies).
--   * strings are never ordered with < or table.sort (Redis sets
--     LC_COLLATE, so < is strcoll); orders come from sorted sets (bytes) or
--     from Go, and bless() compares bytes where a script must.
--   * time is A.now; TIME is never called.
--   * a reply is a flat array of name/value pairs (a value is a string, a
--     number, or a list or pairs array of them), built directly (enc()
--     turns a table into one where a reply holds maps); booleans travel as
--     1/0. Every nested table costs the server more to send than its
--     elements would at the top level.
--
-- What costs the server, per call: every definition a script includes (a
-- closure, and an upvalue for each helper another one calls), every string
-- that enters Lua (hashed byte by byte), every element of a reply, and each
-- redis.call (about 0.5 µs beyond the command itself).

local function S(n)
  return string.format('%d', n)
end

local function N(s)
  if s == nil or s == '' or s == false then return 0 end
  return tonumber(s)
end

local function now_ms()
  return N(A.now)
end

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

local function split_csv(s)
  local out = {}
  if s == nil or s == '' then return out end
  local i = 1
  while true do
    local j = string.find(s, ',', i, true)
    if j == nil then
      out[#out + 1] = string.sub(s, i)
      return out
    end
    out[#out + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
end

-- missing_caps returns the CSV of the tokens of required (a sorted CSV) that
-- have (a sorted CSV) does not hold, in required's order.
local function missing_caps(required, have)
  if required == '' then return '' end
  local set = {}
  for _, t in ipairs(split_csv(have)) do set[t] = true end
  local out = {}
  for _, t in ipairs(split_csv(required)) do
    if not set[t] then out[#out + 1] = t end
  end
  return table.concat(out, ',')
end

-- netstrings decodes "<len>:<bytes>" repeated into a list of strings.
local function netstrings(s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = string.find(s, ':', i, true)
    local len = tonumber(string.sub(s, i, c - 1))
    out[#out + 1] = string.sub(s, c + 1, c + len)
    i = c + len + 1
  end
  return out
end

local function hash_to_table(raw)
  local t = {}
  for i = 1, #raw, 2 do t[raw[i]] = raw[i + 1] end
  return t
end

-- enc turns a reply table into what Redis returns: a map becomes a flat
-- array of name/value pairs, a list an array, booleans 1/0; strings and
-- numbers stay (a number is an integer reply). The Go decoder reads the
-- pairs by name.
local function enc(v)
  local tv = type(v)
  if tv == 'table' then
    local out = {}
    if v[1] ~= nil or next(v) == nil then
      for i = 1, #v do out[i] = enc(v[i]) end
    else
      local n = 0
      for k, x in pairs(v) do
        out[n + 1] = k
        out[n + 2] = enc(x)
        n = n + 2
      end
    end
    return out
  end
  if tv == 'boolean' then
    if v then return 1 end
    return 0
  end
  if tv == 'string' or tv == 'number' then return v end
  error('valkeystore: cannot encode a ' .. tv)
end

local function ok(t)
  return enc(t or {})
end

local function fail(code, detail, field)
  return { 'err', code, 'detail', detail or '', 'field', field or '' }
end

-- ---- keys ----------------------------------------------------------------

-- ks is the keyspace of the script's partition, parsed from K.lanes
-- ("<prefix>:idx:<tag>:lanes").
local ks_cache
local function ks()
  if ks_cache == nil then
    local pfx, tag = string.match(K.lanes, '^(.*):idx:(%b{}):lanes$')
    if pfx == nil then error('valkeystore: malformed lanes key') end
    ks_cache = { pfx = pfx, tag = tag, idx = pfx .. ':idx:' .. tag .. ':' }
  end
  return ks_cache
end

local function lane_key(lane, name)
  return ks().idx .. 'lane:' .. lane .. ':' .. name
end

-- route_key is the route group of namespace ns and required capabilities
-- csv; route_member names it in the lane's route_groups ("<ns>:<csv>": a
-- namespace has no ':').
local function route_key(lane, ns, csv)
  return ks().idx .. 'lane:' .. lane .. ':route:' .. ns .. ':' .. csv
end

local function route_member(ns, csv)
  return ns .. ':' .. csv
end

local function work_channel(lane)
  return ks().pfx .. ':work:' .. lane
end

local function lease_channel(wi)
  return ks().pfx .. ':lease:' .. wi
end

-- exec_keys derives the keys a record uses from the execution's base
-- "<prefix>:exec:<tag>:<id>"; its other keys are base .. ':payload',
-- ':result' and ':tags' (keys.go's execKeys names the same).
local function exec_keys(base)
  return { base = base, core = base .. ':core', history = base .. ':lease:history' }
end

local function exec_keys_of(id)
  return exec_keys(ks().pfx .. ':exec:' .. ks().tag .. ':' .. id)
end

local function attempt_key(e, i)
  return e.k.base .. ':attempt:' .. S(i)
end

-- ---- the execution record ----------------------------------------------------

-- A record is X:core's hot fields decoded by cjson, e[1] the numbers and
-- e[2] the strings, with the execution's keys in e.k and, once a cold field
-- was used, the cold fields in e.c (record.go).

local function blank_exec(k)
  local n, s = rec_blank()
  return { n, s, k = k, c = rec_blank_cold() }
end

local function load_exec(k)
  local r = redis.call('HMGET', k.core, 'n', 's')
  if not r[1] then return nil end
  local n = cjson.decode(r[1])
  -- e[1][1] is layout_version (record.go): upgrade a past layout, refuse
  -- an unknown one
  if n[1] ~= REC_VERSION then return rec_upgrade(n, cjson.decode(r[2]), k) end
  return { n, cjson.decode(r[2]), k = k }
end

-- rec_cold returns e's cold fields, reading them on first use.
local function rec_cold(e)
  local c = e.c
  if c == nil then
    c = cjson.decode(redis.call('HGET', e.k.core, 'c'))
    e.c = c
  end
  return c
end

local function save_exec(e)
  local n, s = string.format(REC_NUM_FMT, unpack(e[1])), cjson.encode(e[2])
  local c = e.c
  if c == nil then
    redis.call('HSET', e.k.core, 'n', n, 's', s)
  else
    redis.call('HSET', e.k.core, 'n', n, 's', s,
      'c', string.format(REC_COLD_FMT, unpack(c[1])) .. cjson.encode(c[2]) .. ']')
  end
end

-- record_pairs returns every field of the record as name/value pairs.
local function record_pairs(e)
  local out, n = {}, 0
  local c = rec_cold(e)
  local hn, hs, cn, cs = rec_names()
  for _, v in ipairs({ { hn, e[1] }, { hs, e[2] }, { cn, c[1] }, { cs, c[2] } }) do
    for i, name in ipairs(v[1]) do
      out[n + 1], out[n + 2], n = name, v[2][i], n + 2
    end
  end
  return out
end

-- ---- state ---------------------------------------------------------------

-- blocked_index names the index of a blocked eligibility state
-- ("blocked_by_route": "blocked:route"); nil for any other state.
local function blocked_index(es)
  if string.sub(es, 1, 11) ~= 'blocked_by_' then return nil end
  return 'blocked:' .. string.sub(es, 12)
end

-- The blocked indexes in the order ExecutionIndexes checks them.
local BLOCKED_NAMES = {
  'blocked:dependencies', 'blocked:budget', 'blocked:quota', 'blocked:route',
  'blocked:operator', 'blocked:lane_state',
}

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

-- ---- fences and replays ----------------------------------------------------

-- fence_arg is the caller's fence from ARGV.
local function fence_arg()
  return { lease_id = A.lease_id, epoch = A.epoch, attempt_id = A.attempt_id }
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

-- ---- attempts and history ---------------------------------------------------

-- end_attempt closes the current attempt if it is open. An active
-- execution's attempt is open (started): only a claim makes an execution
-- active, and every transition out of active closes or suspends it.
local function end_attempt(e, now, status, reason, cat)
  if e.cur_attempt < 0 then return end
  local key = attempt_key(e, e.cur_attempt)
  if e.lifecycle_phase ~= 'active' then
    local st = redis.call('HGET', key, 'status')
    if st ~= 'started' and st ~= 'suspended' then return end
  end
  redis.call('HSET', key, 'status', status, 'ended_at', S(now), 'failure_reason', reason,
    'failure_category', cat)
end

-- add_history appends an event to the lease history, a LIST of entries
-- "<seq>|<epoch>|<attempt>|<at>|<kind>|<lease id>|<instance>|<reason>"
-- (the reason last: it may hold "|"), keeping the newest LEASE_HISTORY.
local function add_history(e, now, kind, reason)
  e.hist_seq = e.hist_seq + 1
  local n = redis.call('RPUSH', e.k.history,
    string.format('%d|%d|%d|%d|', e.hist_seq, e.epoch, e.cur_attempt, now)
      .. kind .. '|' .. e.lease_id .. '|' .. e.lease_wi .. '|' .. reason)
  if n > LEASE_HISTORY then redis.call('LTRIM', e.k.history, S(n - LEASE_HISTORY), '-1') end
end

-- ---- indexes ---------------------------------------------------------------

local function eligible_score(e)
  return -e.priority * 1000000000000 + e.created_at
end

local function runnable_index(es)
  if es == 'eligible_now' then return 'eligible' end
  if es == 'not_eligible_until_time' then return 'delayed' end
  return blocked_index(es)
end

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
    if e.eligibility_state == 'blocked_by_route' then remove_route_group(e) end
  elseif lp == 'suspended' then
    redis.call('ZREM', lane_key(e.lane, 'suspended'), e.id)
  elseif lp == 'terminal' then
    redis.call('ZREM', lane_key(e.lane, 'terminal'), e.id)
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
-- e out of its lane index (remove_from_lane) where it has one. The active period ends, so a
-- reclaim grant issued during it goes too. The instance's lease index is
-- the record's lease (see keys.go), so it goes with clear_lease.
local function release_lease(e, now, kind, reason)
  add_history(e, now, kind, reason)
  clear_grant(e)
  redis.call('ZREM', K.lease_expiry, e.id)
  -- an execution is in attempt_timeout exactly while timeout_at is set
  if e.timeout_at ~= 0 then redis.call('ZREM', K.attempt_timeout, e.id) end
  clear_lease(e)
  e.timeout_at = 0
end

-- terminate makes e terminal; its lease is released and it is out of its
-- runnable index.
local function terminate(e, now, to)
  local as = 'attempt_terminal'
  if e.total_attempts == 0 then as = 'none' end
  set_state(e, now, 'terminal', 'unowned', 'not_applicable', 'none', to, as)
  e.terminal_at = now
  e.delay_until = 0
  clear_pending(e)
  clear_grant(e)
  -- only an execution with a deadline is in the deadline index
  if e.deadline ~= 0 then redis.call('ZREM', K.deadline, e.id) end
  if e.timeout_at ~= 0 then redis.call('ZREM', K.attempt_timeout, e.id) end
  redis.call('ZADD', lane_key(e.lane, 'terminal'), S(now), e.id)
end

-- ---- policy ----------------------------------------------------------------

-- backoff_ms is model.RetryPolicy.BackoffMs, bit for bit: defaults, then
-- repeated float multiplication capped at the maximum, then truncation.
local function backoff_ms(e, retry_count)
  if e.retry_backoff == 'fixed' then
    if e.retry_delay_ms == 0 then return 1000 end
    return e.retry_delay_ms
  end
  local delay = e.retry_initial_ms
  if delay == 0 then delay = 1000 end
  local max_ms = e.retry_max_delay_ms
  if max_ms == 0 then max_ms = 60000 end
  local mult = tonumber(e.retry_multiplier) or 0
  if mult == 0 then mult = 2 end
  local i = 0
  while i < retry_count and delay < max_ms do
    delay = delay * mult
    i = i + 1
  end
  if delay > max_ms then delay = max_ms end
  return math.floor(delay)
end

-- fail_or_retry schedules a retry when the category is retryable (Go's
-- model.FailureCategory.Retryable decides) and retries remain, and fails e
-- terminally otherwise. The lease is already released.
local function fail_or_retry(e, now, reason, cat, retryable)
  if retryable and e.retry_count < e.retry_max then
    local until_ms = now + backoff_ms(e, e.retry_count)
    e.retry_count = e.retry_count + 1
    set_pending(e, 'retry', reason, '')
    make_runnable(e, now, until_ms, 'waiting_for_retry_backoff', 'pending_retry_attempt')
    return 'retry_scheduled', until_ms
  end
  e.failure_reason = reason
  e.failure_category = cat
  terminate(e, now, 'failed')
  return 'terminal_failed', 0
end

-- ---- claims ----------------------------------------------------------------

-- check_claimable is the shared front of claim, grant-and-claim and
-- claim-next.
local function check_claimable(e)
  if e.lifecycle_phase ~= 'runnable' or e.eligibility_state ~= 'eligible_now' or e.terminal_outcome ~= 'none' then
    return fail('execution_not_leaseable')
  end
  if e.ownership_state ~= 'unowned' then return fail('lease_conflict') end
  if e.attempt_state == 'running_attempt' then return fail('active_attempt_exists') end
  return nil
end

-- check_grant verifies that e holds a live grant of kind issued to the
-- claiming worker instance, and that the claimer's capabilities (csv) still
-- cover e's requirement.
local function check_grant(e, kind, worker, wi, caps, now)
  if e.grant_kind ~= kind or e.grant_worker_id ~= worker or e.grant_wi ~= wi then
    return fail('invalid_claim_grant')
  end
  if not grant_live(e, now) then return fail('claim_grant_expired') end
  local missing = missing_caps(e.required_caps, caps)
  if missing ~= '' then return fail('capability_mismatch', missing) end
  return nil
end

-- lease_req is the caller's LeaseRequest from ARGV.
local function lease_req()
  return {
    worker_id = A.worker_id,
    wi = A.worker_instance_id,
    lease_id = A.lease_id,
    attempt_id = A.attempt_id,
    ttl = N(A.lease_ttl),
  }
end

local function renew_deadline(now, ttl)
  local x = ttl * 2
  return now + (x - x % 3) / 3
end

-- claim starts (or resumes) an attempt under a new lease, saves e and
-- returns the ClaimResult's pairs. The caller has checked that e is
-- claimable.
local function claim(e, r, now)
  redis.call('ZREM', lane_key(e.lane, 'eligible'), e.id)
  clear_grant(e)
  e.epoch = e.epoch + 1
  e.lease_id, e.lease_worker_id, e.lease_wi = r.lease_id, r.worker_id, r.wi
  e.lease_acquired_at = now
  e.lease_expires_at = now + r.ttl
  e.lease_renew_by = renew_deadline(now, r.ttl)
  local resumed = e.attempt_state == 'attempt_interrupted' and e.cur_attempt >= 0
  local akey, aid, atype
  if resumed then
    akey = attempt_key(e, e.cur_attempt)
    local a = redis.call('HMGET', akey, 'id', 'type')
    aid, atype = a[1], a[2]
    redis.call('HSET', akey, 'status', 'started', 'lease_id', r.lease_id, 'lease_epoch', S(e.epoch),
      'worker_id', r.worker_id, 'wi', r.wi)
  else
    atype = 'initial'
    if e.pending_type ~= '' then atype = e.pending_type end
    aid = r.attempt_id
    e.cur_attempt = e.total_attempts
    e.cur_attempt_id = aid
    e.total_attempts = e.total_attempts + 1
    akey = attempt_key(e, e.cur_attempt)
    redis.call('HSET', akey, 'id', aid, 'type', atype, 'status', 'started',
      'started_at', S(now), 'ended_at', '0', 'failure_reason', '', 'failure_category', '',
      'lease_id', r.lease_id, 'lease_epoch', S(e.epoch), 'worker_id', r.worker_id, 'wi', r.wi)
  end
  clear_pending(e)
  e.delay_until = 0
  -- revoke_reason (cold) is set and cleared with lease_revoked_at
  if e.lease_revoked_at ~= 0 then e.revoke_reason = '' end
  e.lease_expired_at, e.lease_revoked_at = 0, 0
  if e.started_at == 0 then e.started_at = now end
  set_state(e, now, 'active', 'leased', 'not_applicable', 'none', 'none', 'running_attempt')
  redis.call('ZADD', K.lease_expiry, S(e.lease_expires_at), e.id)
  if e.attempt_timeout > 0 then
    e.timeout_at = now + e.attempt_timeout
    redis.call('ZADD', K.attempt_timeout, S(e.timeout_at), e.id)
  end
  if resumed then
    add_history(e, now, 'resumed', '')
  else
    add_history(e, now, 'acquired', '')
  end
  save_exec(e)
  return {
    'id', e.id,
    'lease_id', e.lease_id,
    'epoch', e.epoch,
    'worker_id', e.lease_worker_id,
    'worker_instance_id', e.lease_wi,
    'acquired_at', e.lease_acquired_at,
    'expires_at', e.lease_expires_at,
    'renew_by', e.lease_renew_by,
    'attempt_id', aid,
    'attempt_index', e.cur_attempt,
    'attempt_type', atype,
    'resumed', resumed and 1 or 0,
    'ns', e.ns,
    'lane', e.lane,
    'kind', e.kind,
    'priority', e.priority,
    'payload', redis.call('GET', e.k.base .. ':payload') or '',
    'tags', redis.call('HGETALL', e.k.base .. ':tags'),
    'retry_count', e.retry_count,
    'retry_max', e.retry_max,
    'created_at', e.created_at,
    'timeout_at', e.timeout_at,
  }
end

-- block moves an eligible execution to the blocked index of reason.
local function block(e, now, reason, detail)
  local es = block_es(reason)
  redis.call('ZREM', lane_key(e.lane, 'eligible'), e.id)
  set_state(e, now, 'runnable', 'unowned', es, reason, 'none', e.attempt_state)
  e.blocking_detail = detail
  clear_grant(e)
  redis.call('ZADD', lane_key(e.lane, blocked_index(es)), S(now), e.id)
  if es == 'blocked_by_route' then
    local csv = e.required_caps
    redis.call('ZADD', route_key(e.lane, e.ns, csv), S(now), e.id)
    redis.call('ZADD', lane_key(e.lane, 'route_groups'), '0', route_member(e.ns, csv))
  end
end

local function unblock(e, now)
  remove_from_lane(e)
  set_state(e, now, 'runnable', 'unowned', 'eligible_now', 'waiting_for_worker', 'none', e.attempt_state)
  add_eligible(e)
end

-- claim_next claims the best eligible execution of lane that a worker with
-- caps can serve (of namespace ns only, unless ns is ''), walking at most scan_limit heads; a head no live worker
-- (live) can serve moves to blocked:route, one another worker could serve
-- is skipped. r is the lease request. It returns the pairs of
-- ExecutionClaimNext's reply: blocked, skipped and, when it claimed one,
-- claimed = 1 and claim's pairs (at the same level: every nested table
-- costs the server more to send).
--
-- The heads are read one first (usually it is claimed), then the rest; a
-- walked head leaves the eligible index only when it is blocked, so the
-- unwalked ones start at rank walked - blocked.
local function claim_next(lane, ns, caps, live, scan_limit, r, now)
  local key = lane_key(lane, 'eligible')
  local blocked = {}
  local skipped, walked, want = 0, 0, 1
  while walked < scan_limit do
    local from = walked - #blocked
    local heads = redis.call('ZRANGE', key, S(from), S(from + want - 1))
    for _, id in ipairs(heads) do
      walked = walked + 1
      local e = load_exec(exec_keys_of(id))
      if e == nil or check_claimable(e) ~= nil or (ns ~= '' and e.ns ~= ns) then
        skipped = skipped + 1
      elseif grant_live(e, now) and e.grant_worker_id ~= r.worker_id then
        skipped = skipped + 1
      elseif missing_caps(e.required_caps, caps) == '' then
        local t = claim(e, r, now)
        local n = #t
        t[n + 1], t[n + 2], t[n + 3], t[n + 4], t[n + 5], t[n + 6] =
          'claimed', 1, 'blocked', blocked, 'skipped', skipped
        return t
      elseif missing_caps(e.required_caps, live) == '' then
        skipped = skipped + 1
      else
        e.last_cap_mismatch_at = now
        block(e, now, 'waiting_for_capable_worker',
          'no live worker has: ' .. missing_caps(e.required_caps, live))
        save_exec(e)
        blocked[#blocked + 1] = id
      end
    end
    if #heads < want then break end
    want = scan_limit - walked
  end
  return { 'blocked', blocked, 'skipped', skipped }
end

-- ---- recovery --------------------------------------------------------------

local function reclaimable(e)
  return e.lifecycle_phase == 'active'
    and (e.ownership_state == 'lease_expired_reclaimable' or e.ownership_state == 'lease_revoked')
end

-- reclaim_cap_reached fails e terminally (and saves it) when its recoveries
-- are used up.
local function reclaim_cap_reached(e, now)
  if e.reclaim_count < e.max_reclaims then return false end
  local reason = 'max_reclaims_exceeded'
  end_attempt(e, now, 'interrupted_reclaimed', reason, 'infra_crash')
  remove_from_lane(e)
  release_lease(e, now, 'released', reason)
  e.failure_reason = reason
  e.failure_category = 'infra_crash'
  terminate(e, now, 'failed')
  save_exec(e)
  return true
end

-- ---- scripts' common front -------------------------------------------------

-- the_exec loads the script's own execution (K.core, id A.id).
local function the_exec()
  return load_exec(exec_keys(string.sub(K.core, 1, -6)))
end

-- ---- worker registry -------------------------------------------------------

-- worker_key derives a worker record's key from K.workers
-- ("<prefix>:idx:<tag>:workers").
local function worker_key(wi)
  local pfx, tag = string.match(K.workers, '^(.*):idx:(%b{}):workers$')
  if pfx == nil then error('valkeystore: malformed workers key') end
  return pfx .. ':worker:' .. tag .. ':' .. wi
end

local function worker_load(key)
  local raw = redis.call('HGETALL', key)
  if #raw == 0 then return nil end
  return hash_to_table(raw)
end

local function worker_alive(w, now)
  return N(w.expires_at) > now
end
