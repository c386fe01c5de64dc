-- record: loading and saving the execution record
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- A record is X:core's hot fields decoded by cjson, e[1] the numbers and
-- e[2] the strings, with the execution's keys in e.k and, once a cold field
-- was used, the cold fields in e.c (record.go). e[3] is the public state
-- the record is counted under in I:counts (ExecutionCounts), nil when it is
-- not counted: a new record, or one a build before layout v6 wrote.
-- e.md is 1 when the execution has metadata (X:meta, lua/lib/create.lua).

local function blank_exec(k)
  local n, s = rec_blank()
  -- c is set apart: gopher-lua (miniredis) also stores a call's result
  -- that ends a table constructor at the next array index, keyed or not,
  -- which would make it e[3]
  local e = { n, s, k = k }
  e.c = rec_blank_cold()
  return e
end

local function load_exec(k)
  local r = redis.call('HMGET', k.core, 'n', 's')
  if not r[1] then return nil end
  local n = cjson.decode(r[1])
  -- e[1][1] is layout_version (record.go): upgrade a past layout, refuse
  -- an unknown one
  local v = n[1]
  if v ~= REC_VERSION then
    local e = rec_upgrade(n, cjson.decode(r[2]), k)
    -- layout v6 and later records are counted in I:counts (record.go); an
    -- earlier one is marked (e[4]) so that its first save lists its lane
    -- again (lane_release in lib/retention.lua trusts the counters)
    if v >= 6 then e[3] = public_state(e) else e[4] = true end
    return e
  end
  local e = { n, cjson.decode(r[2]), k = k }
  e[3] = public_state(e)
  return e
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

-- count_add adds d to the counter of e's namespace, lane, kind and public
-- state ps in its partition's I:counts (a hash field
-- "<ns>|<lane>|<state>|<kind>": only the kind may hold '|'), dropping a
-- field that reaches zero (and then returning true). The key comes from
-- the record's base key, so every script that saves a record can count
-- without declaring it.
local counts_key
local function count_field(e, ps)
  if counts_key == nil then
    local pfx, tag = string.match(e.k.base, '^(.-):exec:(%b{}):')
    counts_key = pfx .. ':idx:' .. tag .. ':counts'
  end
  return e.ns .. '|' .. e.lane .. '|' .. ps .. '|' .. e.kind
end
local function count_by(f, d)
  if redis.call('HINCRBY', counts_key, f, d) == 0 then
    redis.call('HDEL', counts_key, f)
    return true
  end
  return false
end
local function count_add(e, ps, d)
  return count_by(count_field(e, ps), d)
end

-- count_held is the counter field of a decrement put off by count_hold:
-- false while the next save's decrement is to be held, the field once it
-- is, nil otherwise. The completion of S1's complete-and-claim-next takes
-- its job out of "active" and the claim puts the next one in: held, the
-- two meet in save_exec and neither runs (two HINCRBY fewer per job).
-- count_release applies a decrement no increment met, so the counters end
-- as if each save had moved them; only a script that reads no counter
-- between the hold and the release may hold (execution_complete).
local count_held
local function count_hold()
  count_held = false
end
local function count_release()
  if count_held then count_by(count_held, -1) end
  count_held = nil
end

-- lane_relist lists e's lane in its partition's I:lanes again, for a
-- record of a layout before v6 (not counted): lane_release
-- (lib/retention.lua) may have dropped the lane, seeing no counted
-- execution of it.
local function lane_relist(e)
  local pfx, tag = string.match(e.k.base, '^(.-):exec:(%b{}):')
  redis.call('ZADD', pfx .. ':idx:' .. tag .. ':lanes', '0', e.lane)
end

-- stream_fence is the fence copy X:core's field sf holds while e has an
-- open stream (e.stream_open ~= 0), so that stream_append can check a
-- caller's fence without loading the record: "<attempt>|<lease expiry>|
-- <lease id>|<epoch>|<attempt id>" when the open stream is the current
-- attempt's and that attempt holds a lease validate_lease would accept
-- until its expiry, '-' (no append passes) otherwise. save_exec writes it,
-- close_stream (lib/stream.lua) deletes it, and nothing else writes a
-- record, so it is never older than the record.
local function stream_fence(e)
  local own = e.ownership_state
  if e.stream_open ~= e.cur_attempt + 1 or e.lifecycle_phase ~= 'active' or e.lease_id == '' or
    own == 'lease_revoked' or own == 'lease_expired_reclaimable' then
    return '-'
  end
  return S(e.cur_attempt) .. '|' .. S(e.lease_expires_at) .. '|' .. e.lease_id .. '|' .. S(e.epoch) .. '|' ..
    e.cur_attempt_id
end

-- save_exec writes e and moves it between the counters of the public state
-- it was loaded in (e[3]) and the one it is saved in. A record with an open
-- stream gets its fence copy (stream_fence) in the same write; one without
-- pays one comparison.
local function save_exec(e)
  local n, s = string.format(REC_NUM_FMT, unpack(e[1])), cjson.encode(e[2])
  local c = e.c
  if c ~= nil then
    c = string.format(REC_COLD_FMT, unpack(c[1])) .. cjson.encode(c[2]) .. ']'
  end
  if e.stream_open == 0 then
    if c == nil then
      redis.call('HSET', e.k.core, 'n', n, 's', s)
    else
      redis.call('HSET', e.k.core, 'n', n, 's', s, 'c', c)
    end
  elseif c == nil then
    redis.call('HSET', e.k.core, 'n', n, 's', s, 'sf', stream_fence(e))
  else
    redis.call('HSET', e.k.core, 'n', n, 's', s, 'c', c, 'sf', stream_fence(e))
  end
  local ps = public_state(e)
  local was = e[3]
  if was ~= ps then
    if was then
      if count_held == false then
        count_held = count_field(e, was)
      else
        count_add(e, was, -1)
      end
    elseif e[4] then
      lane_relist(e)
    end
    local f = count_field(e, ps)
    if f == count_held then
      count_held = nil
    else
      count_by(f, 1)
    end
    e[3] = ps
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
