-- suspend: suspensions, waitpoints and signals (model.SuspendStore)
--
-- Part of the library put in front of the scripts: see lua/README.md.
-- The keys are wait.lua's; memstore/suspend.go is the Go half.

-- the helpers of wait.lua's kit
local wp_key = wait_kit().key_of
local wp_expiry_sync = wait_kit().expiry_sync
local susp_close = wait_kit().close_susp

-- Resume conditions are model.ResumeCondition's canonical JSON
-- (model.EncodeCondition): k the kind, name, wp, of, n, distinct, wps.
-- A signal as a condition reads it is { id, wp, name, source }.

-- cond_leaf is model.ResumeCondition.accepts: the signal's waitpoint and
-- name match the leaf c (own: the suspension's own waitpoint).
local function cond_leaf(c, own, s)
  if c.name ~= nil and c.name ~= '' and c.name ~= s.name then return false end
  if c.k == 'signal' then
    local w = c.wp
    if w == nil or w == '' then w = own end
    return s.wp == w
  end
  if c.k == 'count' then
    if c.wps == nil or #c.wps == 0 then return s.wp == own end
    for _, w in ipairs(c.wps) do
      if s.wp == w then return true end
    end
  end
  return false
end

-- cond_accepts is model.ResumeCondition.Accepts.
local function cond_accepts(c, own, s)
  if c.k == 'all_of' then
    for _, sub in ipairs(c.of) do
      if cond_accepts(sub, own, s) then return true end
    end
    return false
  end
  return cond_leaf(c, own, s)
end

-- cond_satisfied is model.ResumeCondition.Satisfied over the signals sigs.
local function cond_satisfied(c, own, sigs)
  if c.k == 'signal' then
    for _, s in ipairs(sigs) do
      if cond_leaf(c, own, s) then return true end
    end
    return false
  end
  if c.k == 'all_of' then
    for _, sub in ipairs(c.of) do
      if not cond_satisfied(sub, own, sigs) then return false end
    end
    return true
  end
  if c.k == 'count' then
    local seen, n = {}, 0
    for _, s in ipairs(sigs) do
      if cond_leaf(c, own, s) then
        local key = s.wp
        if c.distinct == 'signals' then
          key = s.id
        elseif c.distinct == 'sources' then
          key = s.source
        end
        if not seen[key] then
          seen[key] = true
          n = n + 1
        end
      end
    end
    return n >= c.n
  end
  return false
end

-- sig_encode is a signal's stored fields as netstrings: seq id wp name
-- source idem effect ignored delivered_at (the payload is kept apart, in
-- X:sigpay, so evaluating a condition never reads one).
local function sig_encode(f)
  local out = {}
  for i = 1, #f do
    out[i] = #f[i] .. ':' .. f[i]
  end
  return table.concat(out)
end

-- sig_decode reads what a condition needs of a stored signal.
local function sig_decode(raw)
  local f = netstrings(raw)
  return { seq = tonumber(f[1]), id = f[2], wp = f[3], name = f[4], source = f[5] }
end

-- chunked runs cmd on key with ids, at most 1000 at a time (unpack's
-- limit), and returns the replies joined.
local function chunked(cmd, key, ids)
  local out = {}
  for i = 1, #ids, 1000 do
    local r = redis.call(cmd, key, unpack(ids, i, math.min(i + 999, #ids)))
    if type(r) == 'table' then
      for j = 1, #r do out[#out + 1] = r[j] end
    end
  end
  return out
end

-- sigs_load reads the stored signals ids (of e, base its keys' base) for
-- a condition, in the order given.
local function sigs_load(base, ids)
  local out = {}
  if #ids == 0 then return out end
  local raw = chunked('HMGET', base .. ':sig', ids)
  for i = 1, #raw do out[i] = sig_decode(raw[i]) end
  return out
end

-- sigs_reply is the stored signals ids as one flat list of (fields,
-- payload) pairs; Go decodes the fields (netstrings).
local function sigs_reply(base, ids)
  local out = {}
  if #ids == 0 then return out end
  local raw = chunked('HMGET', base .. ':sig', ids)
  local pay = chunked('HMGET', base .. ':sigpay', ids)
  for i = 1, #ids do
    out[2 * i - 1] = raw[i]
    out[2 * i] = pay[i] or ''
  end
  return out
end

-- susp_resume resumes the suspended e (reason by, applying its
-- suspension's policy): runnable with its paused attempt interrupted, so
-- the next claim resumes it, eligible now (the lane is woken) or delayed.
-- It returns the delay's end (0: eligible now).
local function susp_resume(e, now, by)
  local delay = susp_close(e, now, by, true) or 0
  wp_expiry_sync(e)
  remove_from_lane(e)
  local until_ms = 0
  if delay > 0 then until_ms = now + delay end
  make_runnable(e, now, until_ms, 'waiting_for_resume_delay', 'attempt_interrupted')
  return until_ms
end

-- drop_closed forgets e's last suspension and its closed waitpoints, with
-- the signals nothing kept holds any more, as a new suspension does first.
local function drop_closed(e)
  local base = e.k.base
  redis.call('DEL', base .. ':susp', base .. ':susp:sigs')
  local keep = {}
  for _, wp in ipairs(redis.call('ZRANGE', base .. ':wps', '0', '-1')) do
    local wk = wp_key(wp)
    if redis.call('HGET', wk, 'state') == 'closed' then
      redis.call('DEL', wk, wk .. ':sigs', wk .. ':dedup')
      redis.call('ZREM', base .. ':wps', wp)
    else
      for _, id in ipairs(redis.call('LRANGE', wk .. ':sigs', '0', '-1')) do keep[id] = true end
    end
  end
  local gone = {}
  for _, id in ipairs(redis.call('HKEYS', base .. ':sig')) do
    if not keep[id] then gone[#gone + 1] = id end
  end
  if #gone > 0 then
    chunked('HDEL', base .. ':sig', gone)
    chunked('HDEL', base .. ':sigpay', gone)
  end
end

-- susp_reply is ExecutionSuspend's answer for e's suspension (its hash
-- key sk): the outcome, the own waitpoint and its creation time, and the
-- signals when they already satisfied it.
local function susp_reply(e, sk, replayed)
  local s = redis.call('HMGET', sk, 'outcome', 'wp')
  local sigs = {}
  if s[1] == 'already_satisfied' then
    sigs = sigs_reply(e.k.base, redis.call('LRANGE', sk .. ':sigs', '0', '-1'))
  end
  return {
    'outcome', s[1],
    'waitpoint', s[2],
    'created_at', N(redis.call('HGET', wp_key(s[2]), 'created_at')),
    'signals', sigs,
    'replayed', replayed and 1 or 0,
  }
end
