-- admission: the execution partition's side of admission (model.AdmissionStore;
-- keys.go has the keys): blocked groups and the scanner filter (the quota
-- release outbox is written by release_lease, index.lua)
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
--
-- adm_group is the one helper for them (so the scripts of the hot path,
-- which block and unblock, carry one closure for it): op 'join' adds
-- execution x to the group at score now, 'leave' takes it out, and both
-- keep the partition's lists in step (a group that empties is forgotten);
-- 'drop' only forgets the group when empty, and 'key' returns its key.
local function adm_group(op, lane, kind, id, qkey, x, now)
  local g, byLane, byID
  if kind == 'b' then
    g, byLane, byID = lane_key(lane, 'adm:b:' .. id), lane .. '\tb\t' .. id, 'b\t' .. id .. '\t' .. lane
  else
    g, byLane, byID = lane_key(lane, 'adm:q:' .. id .. ':' .. qkey), lane .. '\tq\t' .. id .. '\t' .. qkey,
      'q\t' .. id .. '\t' .. qkey .. '\t' .. lane
  end
  if op == 'key' then return g end
  if op == 'join' then
    redis.call('ZADD', g, S(now), x)
    redis.call('ZADD', ks().idx .. 'adm_groups', '0', byLane)
    redis.call('ZADD', ks().idx .. 'adm_by', '0', byID)
    return g
  end
  if op == 'leave' then redis.call('ZREM', g, x) end
  if redis.call('ZCARD', g) == 0 then
    redis.call('ZREM', ks().idx .. 'adm_groups', byLane)
    redis.call('ZREM', ks().idx .. 'adm_by', byID)
  end
  return g
end

-- adm_parse_group reads an I:adm_groups member: lane, kind ('b' or 'q'),
-- budget or quota id, bucket key.
local function adm_parse_group(m)
  local t = string.find(m, '\t', 1, true)
  local lane, kind, rest = string.sub(m, 1, t - 1), string.sub(m, t + 1, t + 1), string.sub(m, t + 3)
  if kind == 'b' then return lane, kind, rest, '' end
  return lane, kind, string.sub(rest, 1, 36), string.sub(rest, 38)
end

-- scan_filter_match reports whether e (nil: gone, which matches) matches
-- a ScannerFilter: namespace ns ('' any), tag tk ('' none) equal to tv.
local function scan_filter_match(e, ns, tk, tv)
  if e == nil then return true end
  if ns ~= '' and e.ns ~= ns then return false end
  if tk == '' then return true end
  return redis.call('HGET', e.k.base .. ':tags', tk) == tv
end
