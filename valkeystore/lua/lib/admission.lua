-- admission: the execution partition's side of admission (model.AdmissionStore;
-- keys.go has the keys): blocked groups, the quota release outbox, the
-- scanner filter
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- A lane's executions blocked on budget b are the group
-- I:lane:<L>:adm:b:<b>, those blocked on bucket (q, key) the group
-- I:lane:<L>:adm:q:<q>:<key> (ZSETs by block time). The partition lists
-- its non-empty groups twice: I:adm_groups by lane first
-- ("<L>\tb\t<b>", "<L>\tq\t<q>\t<key>": byte order is AdmissionBlocked's
-- order, as no lane, id or key holds a control character) and I:adm_by by
-- budget or bucket first ("b\t<b>\t<L>", "q\t<q>\t<key>\t<L>": the lanes
-- of one budget or bucket are one lexical range).
local function adm_group_names(lane, kind, id, qkey)
  if kind == 'b' then
    return lane_key(lane, 'adm:b:' .. id), lane .. '\tb\t' .. id, 'b\t' .. id .. '\t' .. lane
  end
  return lane_key(lane, 'adm:q:' .. id .. ':' .. qkey), lane .. '\tq\t' .. id .. '\t' .. qkey,
    'q\t' .. id .. '\t' .. qkey .. '\t' .. lane
end

-- adm_parse_group reads an I:adm_groups member: lane, kind ('b' or 'q'),
-- budget or quota id, bucket key.
local function adm_parse_group(m)
  local t = string.find(m, '\t', 1, true)
  local lane, kind, rest = string.sub(m, 1, t - 1), string.sub(m, t + 1, t + 1), string.sub(m, t + 3)
  if kind == 'b' then return lane, kind, rest, '' end
  return lane, kind, string.sub(rest, 1, 36), string.sub(rest, 38)
end

-- adm_drop_group forgets the group of (lane, kind, id, qkey) once empty.
local function adm_drop_group(lane, kind, id, qkey)
  local g, byLane, byID = adm_group_names(lane, kind, id, qkey)
  if redis.call('ZCARD', g) == 0 then
    redis.call('ZREM', ks().idx .. 'adm_groups', byLane)
    redis.call('ZREM', ks().idx .. 'adm_by', byID)
  end
end

-- adm_join_group puts e, just blocked on budget (kind 'b') or on its quota
-- (kind 'q'), in its group.
local function adm_join_group(e, now, kind, budget)
  local id, qkey = budget, ''
  if kind == 'b' then
    e.blocked_budget = budget
  else
    id, qkey = e.quota, e.quota_key
  end
  local g, byLane, byID = adm_group_names(e.lane, kind, id, qkey)
  redis.call('ZADD', g, S(now), e.id)
  redis.call('ZADD', ks().idx .. 'adm_groups', '0', byLane)
  redis.call('ZADD', ks().idx .. 'adm_by', '0', byID)
end

-- adm_leave_group takes e, leaving blocked_by_budget or blocked_by_quota,
-- out of its group (a record blocked before layout v3 is in none).
local function adm_leave_group(e)
  local kind, id, qkey = 'q', e.quota, e.quota_key
  if e.eligibility_state == 'blocked_by_budget' then
    kind, id, qkey = 'b', e.blocked_budget, ''
    e.blocked_budget = ''
  end
  if id == '' then return end
  local g = adm_group_names(e.lane, kind, id, qkey)
  redis.call('ZREM', g, e.id)
  adm_drop_group(e.lane, kind, id, qkey)
end

-- adm_outbox moves the admission e's ending lease held (adm_token) to the
-- partition's quota release outbox: I:quota_outbox (ZSET, score the time,
-- member "<execution>\t<token>": the order of QuotaReleasePending) and
-- I:quota_outbox:data (member → "<quota>\t<key>").
local function adm_outbox(e, now)
  local m = e.id .. '\t' .. e.adm_token
  redis.call('ZADD', ks().idx .. 'quota_outbox', S(now), m)
  redis.call('HSET', ks().idx .. 'quota_outbox:data', m, e.quota .. '\t' .. e.quota_key)
  e.adm_token = ''
end

-- scan_filter_match reports whether e (nil: gone, which matches) matches
-- a ScannerFilter: namespace ns ('' any), tag tk ('' none) equal to tv.
local function scan_filter_match(e, ns, tk, tv)
  if e == nil then return true end
  if ns ~= '' and e.ns ~= ns then return false end
  if tk == '' then return true end
  return redis.call('HGET', e.k.base .. ':tags', tk) == tv
end
