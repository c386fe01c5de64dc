-- claim: capabilities, grants and claims
--
-- Part of the library put in front of the scripts: see lua/README.md.

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
    worker_id = A_worker_id,
    wi = A_worker_instance_id,
    lease_id = A_lease_id,
    attempt_id = A_attempt_id,
    ttl = N(A_lease_ttl),
  }
end

local function renew_deadline(now, ttl)
  local x = ttl * 2
  return now + (x - x % 3) / 3
end

-- lane_paused reports whether lane is paused (LaneStore: the flag
-- lane:<L>:paused of the script's partition, lane_pause.lua).
local function lane_paused(lane)
  return redis.call('EXISTS', lane_key(lane, 'paused')) == 1
end

-- check_admission is a claim's last check: an execution with a quota
-- needs the admission token the lease will hold (r.token).
local function check_admission(e, r)
  if e.adm ~= 0 and e.quota ~= '' and r.token == '' then return fail('admission_required') end
  return nil
end

-- claim starts (or resumes) an attempt under a new lease, saves e and
-- returns the ClaimResult's pairs. The caller has checked that e is
-- claimable. An execution with a quota stores r.token as the admission
-- its lease holds (r.token nil: it keeps the one it holds, a reclaim);
-- one with budgets or a quota also returns its attachments.
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
  redis.call('ZADD', K_lease_expiry, S(e.lease_expires_at), e.id)
  if e.attempt_timeout > 0 then
    e.timeout_at = now + e.attempt_timeout
    redis.call('ZADD', K_attempt_timeout, S(e.timeout_at), e.id)
  end
  if resumed then
    add_history(e, now, 'resumed', '')
  else
    add_history(e, now, 'acquired', '')
  end
  local adm = nil
  if e.adm ~= 0 then
    if e.quota ~= '' and r.token ~= nil then e.adm_token = r.token end
    adm = { 'budgets', e.budgets, 'quota', e.quota, 'quota_key', e.quota_key, 'adm_token', e.adm_token }
  end
  save_exec(e)
  local t = {
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
  if adm ~= nil then
    for _, x in ipairs(adm) do t[#t + 1] = x end
  end
  if e.md ~= 0 then
    t[#t + 1] = 'meta'
    t[#t + 1] = redis.call('HGETALL', e.k.base .. ':meta')
  end
  return t
end

-- block moves an eligible execution to the blocked index of reason; a
-- block on a budget (budget, its id) or on the execution's quota joins
-- that blocked group (admission.lua).
local function block(e, now, reason, detail, budget)
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
  elseif es == 'blocked_by_budget' then
    e.blocked_budget = budget
    adm_group('join', e.lane, 'b', budget, '', e.id, now)
  elseif es == 'blocked_by_quota' then
    adm_group('join', e.lane, 'q', e.quota, e.quota_key, e.id, now)
  end
end

local function unblock(e, now)
  remove_from_lane(e)
  set_state(e, now, 'runnable', 'unowned', 'eligible_now', 'waiting_for_worker', 'none', e.attempt_state)
  add_eligible(e)
end

-- inline_parse reads an InlineAdmission argument (inlineArg in
-- claim_ops.go): lines "b\t<budget id>\t<budget key>" and
-- "q\t<quota id>\t<policy key>\t<buckets key>"; '' is none (nil).
-- These keys are on other slots than the script's: only a standalone
-- server is sent them (model.InlineAdmitter).
local function inline_parse(s)
  if s == '' then return nil end
  local t = { b = {}, q = {} }
  for line in string.gmatch(s, '[^\n]+') do
    local f = {}
    for x in string.gmatch(line, '[^\t]+') do f[#f + 1] = x end
    if f[1] == 'b' then t.b[f[2]] = f[3] else t.q[f[2]] = { key = f[3], buckets = f[4] } end
  end
  return t
end

-- inline_admit is model.InlineAdmission's step for e, a head with budgets
-- or a quota (memstore's admitInline): when inl covers its attachments,
-- every budget exists and is not exhausted and its bucket admits it now,
-- the admission is recorded as quota_admit records one, with the new
-- lease's id (r.lease_id) as the token, and the token ('' without a
-- quota) is returned. Otherwise nothing is written for the admission (a
-- rate window's trim aside) and it returns nil.
--
-- Every refusal means the same here (the caller's path tells them apart),
-- so the checks run in the cheapest order: a budget's dims field is
-- there exactly when the budget is; the rate window is trimmed only when
-- it holds as many entries as the rate (so it never holds more than the
-- rate, and an entry that left it is not counted by any reader anyway);
-- the admission is written with HSETNX after the rate and cap checks,
-- and one the bucket already holds stops there, before the window takes
-- an entry; a bucket that held an admission before this one is listed
-- already (quota_reconcile forgets only empty buckets).
local function inline_admit(e, inl, r, now)
  local bkeys = {}
  for _, b in ipairs(split_csv(e.budgets)) do
    local k = inl.b[b]
    if k == nil then return nil end
    bkeys[#bkeys + 1] = k
  end
  local q = nil
  if e.quota ~= '' then
    q = inl.q[e.quota]
    if q == nil then return nil end
  end
  for _, k in ipairs(bkeys) do
    local dims = redis.call('HGET', k, 'dims')
    if not dims or budget_over(k, dims) ~= '' then return nil end
  end
  if q == nil then return '' end
  local p = redis.call('HMGET', q.key, 'rate', 'window', 'concurrency')
  if not p[1] then return nil end
  local rate, window, conc = N(p[1]), N(p[2]), N(p[3])
  local w, a = q.key .. ':w:' .. e.quota_key, q.key .. ':a:' .. e.quota_key
  if rate > 0 then
    local n = redis.call('ZCARD', w)
    if n >= rate then
      n = n - redis.call('ZREMRANGEBYSCORE', w, '-inf', S(now - window))
      if n >= rate then return nil end
    end
  end
  local held = redis.call('HLEN', a)
  if conc > 0 and held >= conc then return nil end
  if redis.call('HSETNX', a, e.id, S(now) .. ':' .. r.lease_id) == 0 then return nil end
  if rate > 0 then
    redis.call('ZADD', w, S(now), S(redis.call('INCR', q.key .. ':seq:' .. e.quota_key)))
  end
  if held == 0 then redis.call('ZADD', q.buckets, '0', e.quota .. ':' .. e.quota_key) end
  return r.lease_id
end

-- claim_next claims the best eligible execution of lane that a worker with
-- caps can serve (of namespace ns only, unless ns is ''), walking at most
-- scan_limit heads; a head no live worker (live) can serve moves to
-- blocked:route, one another worker could serve or another worker
-- instance holds a live grant on is skipped, and one this worker can
-- serve that needs admission (budgets or a quota) is admitted and claimed
-- when r.inline (inline_parse) admits it (inline_admit), and otherwise
-- granted to it until now + r.admit_ttl, replacing the grant it held,
-- which ends the walk. r is the lease request (with admit_ttl and
-- inline). It returns the pairs of ExecutionClaimNext's reply: blocked,
-- skipped and, when it claimed one, claimed = 1 and claim's pairs (at the
-- same level: every nested table costs the server more to send), or
-- admit = 1 and the AdmissionCandidate's pairs.
--
-- A paused lane (lane_paused) is not walked: the reply is paused = 1.
--
-- The heads are read one first (usually it is claimed), then the rest; a
-- walked head leaves the eligible index only when it is blocked, so the
-- unwalked ones start at rank walked - blocked.
local function claim_next(lane, ns, caps, live, scan_limit, r, now)
  if lane_paused(lane) then return { 'paused', 1, 'blocked', {}, 'skipped', 0 } end
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
      elseif grant_live(e, now) and (e.grant_worker_id ~= r.worker_id or e.grant_wi ~= r.wi) then
        -- a grant is an instance's: another instance of the worker id passes it
        skipped = skipped + 1
      elseif missing_caps(e.required_caps, caps) == '' then
        if e.adm ~= 0 and r.inline ~= nil then r.token = inline_admit(e, r.inline, r, now) end
        if e.adm ~= 0 and r.token == nil then
          e.grant_kind, e.grant_worker_id, e.grant_wi = 'claim', r.worker_id, r.wi
          e.grant_created_at = now
          e.grant_expires_at = now + r.admit_ttl
          e.last_mutation_at = now
          save_exec(e)
          return { 'admit', 1, 'admit_id', e.id, 'admit_budgets', e.budgets, 'admit_quota', e.quota,
            'admit_quota_key', e.quota_key, 'admit_expires_at', e.grant_expires_at,
            'blocked', blocked, 'skipped', skipped }
        end
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
