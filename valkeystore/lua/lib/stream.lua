-- stream: attempt output streams (model.StreamStore; memstore/stream.go)
--
-- Part of the library put in front of the scripts: see lua/README.md.
--
-- Attempt i of execution X keeps its frames in X:stream:<i>, a STREAM
-- whose entry ids are 0-<seq> (a stream whose meta has fmt 2: every
-- stream created since the server numbers frames) or <seq>-0 (an older
-- stream), each entry the fields t (type), p (payload), e (encoding), c
-- (correlation id), m (mode), ts (time, ms) and v (the summary version, 0
-- but for summary frames), always in that order; and its state in
-- X:stream:<i>:meta, a HASH: last_seq, closed (1 once closed), closed_at,
-- closed_reason, persistent (1 after a durable or summary frame),
-- expires_at (the best-effort frames' logical expiry), be_rate, be_at
-- (model.BestEffortRate), doc, version, doc_first, doc_at (the summary
-- document), len (the frames the key holds, as of the last append that
-- wrote the meta), fmt. A persistent fmt-2 stream's key never expires,
-- so the server numbers its frames (XADD 0-*) and its last entry is its
-- last sequence: its durable frames skip the meta (last_seq and len lag
-- behind; readers take the last entry's). A stream exists once its
-- attempt appended a frame; the record's stream_open is the index + 1 of
-- the attempt whose stream is open (0: none), so an attempt's end costs
-- one comparison when it appended nothing. While a stream is open,
-- X:core's field sf holds the fence copy an append checks instead of
-- loading the record (stream_fence, lib/record.lua), and sp the index of
-- the open stream once it is persistent and server-numbered; close_stream
-- deletes both. Appends and closes publish "<id>|<attempt>" on
-- P:stream:<tag> (stream_ops.go's WatchStream).

-- stream_key is attempt i's frames key; its meta hash is the key .. ':meta'.
local function stream_key(e, i)
  return e.k.base .. ':stream:' .. S(i)
end

-- stream_notify publishes a change of attempt i's stream on its
-- partition's channel (the prefix and tag are the execution's base's).
local function stream_notify(e, i)
  local pfx, tag = string.match(e.k.base, '^(.*):exec:(%b{}):')
  redis.call('PUBLISH', pfx .. ':stream:' .. tag, e.id .. '|' .. S(i))
end

-- stream_closed_state reports whether attempt i's stream of e is closed,
-- when (ms, as text) and why. m is its meta's HMGET of last_seq, closed,
-- closed_at, closed_reason (m[1] false: the stream was never opened). A
-- stream never opened reads closed (no_frames) once its attempt ended or
-- its lease was marked expired or revoked.
local function stream_closed_state(e, i, m)
  if m[1] then
    if m[2] == '1' then return true, m[3], m[4] end
    return false, '0', ''
  end
  if i == e.cur_attempt then
    local own = e.ownership_state
    if own == 'lease_expired_reclaimable' or own == 'lease_revoked' then return true, '0', 'no_frames' end
    -- an active execution's attempt is open (end_attempt)
    if e.lifecycle_phase == 'active' then return false, '0', '' end
  end
  local st = redis.call('HGET', attempt_key(e, i), 'status')
  if st ~= 'started' and st ~= 'suspended' then return true, '0', 'no_frames' end
  return false, '0', ''
end

-- close_stream closes the open stream of e's attempt (e.stream_open) with
-- reason, drops the record's fence copy (stream_fence, lib/record.lua) and
-- marks the record as having none; the caller saves it. Every
-- attempt end (end_attempt), lease-expiry mark and revoke calls it, behind
-- "if e.stream_open ~= 0". It is the one definition those scripts carry
-- for streams (each is a closure built on every call: lua/README.md), so
-- it spells out stream_key and stream_notify.
local function close_stream(e, now, reason)
  local i = e.stream_open - 1
  if i < 0 then return end
  e.stream_open = 0
  redis.call('HDEL', e.k.core, 'sf', 'sp')
  local meta = e.k.base .. ':stream:' .. S(i) .. ':meta'
  if redis.call('HGET', meta, 'closed') == '1' then return end
  redis.call('HSET', meta, 'closed', '1', 'closed_at', S(now), 'closed_reason', reason)
  local pfx, tag = string.match(e.k.base, '^(.*):exec:(%b{}):')
  redis.call('PUBLISH', pfx .. ':stream:' .. tag, e.id .. '|' .. S(i))
end

-- close_lost_stream is close_stream for a lease marked expired or revoked:
-- a stream never opened is closed for good (no_frames, closed_at 0), so it
-- stays closed if the attempt resumes under a new lease
-- (memstore.closeLostStream). Not on the hot path.
local function close_lost_stream(e, now, reason)
  if e.stream_open ~= 0 then return close_stream(e, now, reason) end
  if e.cur_attempt < 0 then return end
  local meta = e.k.base .. ':stream:' .. S(e.cur_attempt) .. ':meta'
  if redis.call('HSETNX', meta, 'last_seq', '0') == 0 then return end
  redis.call('HSET', meta, 'closed', '1', 'closed_at', '0', 'closed_reason', 'no_frames')
  local pfx, tag = string.match(e.k.base, '^(.*):exec:(%b{}):')
  redis.call('PUBLISH', pfx .. ':stream:' .. tag, e.id .. '|' .. S(e.cur_attempt))
end

-- best_effort_rate is model.BestEffortRate: the best-effort frame rate
-- estimate (frames per 1000 s) after a frame at now, given the previous
-- estimate and the previous best-effort frame's time (0: none). Every
-- value is a non-negative integer far below 2^53, so math.floor of a
-- quotient is Go's integer division.
local function best_effort_rate(prev, prev_at, now, ttl)
  if prev_at == 0 then return math.floor(BEST_EFFORT_MIN_LEN * 1000000 / (2 * ttl)) end
  local dt = now - prev_at
  if dt < 1 then dt = 1 end
  local inst = math.floor(1000000 / dt)
  return math.floor((inst * 2 + prev * 8) / 10)
end

-- best_effort_len is model.BestEffortLen: how many frames a best-effort
-- append keeps.
local function best_effort_len(rate, ttl)
  local k = math.floor((rate * ttl * 2 + 999999) / 1000000)
  if k < BEST_EFFORT_MIN_LEN then return BEST_EFFORT_MIN_LEN end
  if k > BEST_EFFORT_MAX_LEN then return BEST_EFFORT_MAX_LEN end
  return k
end
