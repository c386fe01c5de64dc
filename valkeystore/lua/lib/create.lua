-- create: a new execution's record and what it owns
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- new_exec fills the blank record e from the create fields in v from
-- index o on, in the order of createFields (valkeystore/execution_ops.go):
-- id namespace lane kind payload priority tags required_caps retry_max
-- retry_backoff retry_delay_ms retry_initial_ms retry_multiplier
-- retry_max_delay_ms max_reclaims max_replays attempt_timeout deadline
-- delay_until budgets quota quota_key ret_ok ret_failed ret_cancelled
-- metadata (delay_until is the caller's; the
-- budgets are a CSV of ids; tags and metadata netstrings). It writes the
-- payload, tags and metadata (X:meta, flagged by e.md) and the partition's lanes, all and deadline entries; the
-- caller makes e runnable or holds it, then saves it.
local function new_exec(e, v, o, now)
  e.id, e.ns, e.lane, e.kind = v[o], v[o + 1], v[o + 2], v[o + 3]
  -- in no flow until flow_join (the blank is 1: an old record may be)
  e.fl = 0
  e.priority = N(v[o + 5])
  e.created_at = now
  e.required_caps = v[o + 7]
  e.retry_max, e.retry_backoff = N(v[o + 8]), v[o + 9]
  e.retry_delay_ms, e.retry_initial_ms = N(v[o + 10]), N(v[o + 11])
  e.retry_multiplier, e.retry_max_delay_ms = v[o + 12], N(v[o + 13])
  e.max_reclaims, e.max_replays = N(v[o + 14]), N(v[o + 15])
  e.attempt_timeout, e.deadline = N(v[o + 16]), N(v[o + 17])
  e.ret_ok, e.ret_failed, e.ret_cancelled = N(v[o + 22]), N(v[o + 23]), N(v[o + 24])
  if v[o + 19] ~= '' or v[o + 20] ~= '' then
    e.adm = 1
    e.budgets, e.quota, e.quota_key = v[o + 19], v[o + 20], v[o + 21]
  end
  if v[o + 4] ~= '' then redis.call('SET', e.k.base .. ':payload', v[o + 4]) end
  local tags = netstrings(v[o + 6])
  if #tags > 0 then redis.call('HSET', e.k.base .. ':tags', unpack(tags)) end
  if v[o + 25] ~= '' then
    redis.call('HSET', e.k.base .. ':meta', unpack(netstrings(v[o + 25])))
    e.md = 1
  end
  redis.call('ZADD', K_lanes, '0', e.lane)
  redis.call('ZADD', K_all, '0', e.id)
  if e.deadline ~= 0 then redis.call('ZADD', K_deadline, S(e.deadline), e.id) end
end

-- tags_change changes the tag hash key (X:tags or F:tags) after create:
-- removes the keys of the netstrings remove, then sets the key/value
-- netstrings set (Go validated both, and that no key is in both). When the
-- result would hold more than max keys it writes nothing and returns nil;
-- else it returns whether the hash changed (setting a present value or
-- removing an absent key changes nothing).
local function tags_change(key, set, remove, max)
  local cur = redis.call('HGETALL', key)
  local have, n = {}, #cur / 2
  for i = 1, #cur, 2 do have[cur[i]] = cur[i + 1] end
  local dels, sets = {}, {}
  local rm = netstrings(remove)
  for i = 1, #rm do
    if have[rm[i]] ~= nil then
      have[rm[i]] = nil
      n = n - 1
      dels[#dels + 1] = rm[i]
    end
  end
  local st = netstrings(set)
  for i = 1, #st, 2 do
    local k, v = st[i], st[i + 1]
    local old = have[k]
    if old ~= v then
      if old == nil then n = n + 1 end
      have[k] = v
      sets[#sets + 1] = k
      sets[#sets + 1] = v
    end
  end
  if n > max then return nil end
  if #dels > 0 then redis.call('HDEL', key, unpack(dels)) end
  if #sets > 0 then redis.call('HSET', key, unpack(sets)) end
  return #dels > 0 or #sets > 0
end
