-- wait: waitpoints and suspensions, the part every ending execution needs
--
-- Part of the library put in front of the scripts: see lua/README.md.
-- The keys (valkeystore/keys.go): W = <prefix>:wp:<tag>:<waitpoint>, a
-- HASH (id, exec, state, created_at, expires_at, keep_at, limit, susp,
-- closed_at, closed_by) with W:sigs (its signal ids, LIST) and W:dedup
-- (idempotency key → "<expires ms>:<signal id>"); per execution X:wps
-- (its waitpoints by creation time, then id), X:susp (its open or last
-- suspension), X:susp:sigs (that suspension's signal ids), X:sig (signal
-- id → its fields as netstrings), X:sigpay (signal id → payload) and
-- X:sigseq (the delivery counter). e.wp_open counts the open (pending or
-- active) waitpoints, so an execution that never used one pays nothing
-- when it ends. memstore/suspend.go is the Go half.

-- wait_kit builds the helpers, once per script and only when it needs
-- them: terminate (on every completion's path) includes wait_kit alone, so
-- an execution without waitpoints pays one closure, not one per helper
-- (README.md); suspend.lua names the helpers for the suspension scripts.

local wait_kit_cache
local function wait_kit()
  if wait_kit_cache then return wait_kit_cache end
  local function key_of(wp)
    return ks().pfx .. ':wp:' .. ks().tag .. ':' .. wp
  end

  -- expiry_sync scores e in the pending-waitpoint expiry index by its
  -- earliest pending waitpoint's expiry, or drops it when none is pending;
  -- it returns that expiry (0: none).
  local function expiry_sync(e)
    local next_at = 0
    for _, wp in ipairs(redis.call('ZRANGE', e.k.base .. ':wps', '0', '-1')) do
      local w = redis.call('HMGET', key_of(wp), 'state', 'expires_at')
      if w[1] == 'pending' then
        local at = N(w[2])
        if next_at == 0 or at < next_at then next_at = at end
      end
    end
    local idx = ks().idx .. 'pending_waitpoint_expiry'
    if next_at == 0 then
      redis.call('ZREM', idx, e.id)
    else
      redis.call('ZADD', idx, S(next_at), e.id)
    end
    return next_at
  end

  -- close_susp closes e's suspension if it is open, with reason by: its
  -- active waitpoints close with it or, when keep (a resume whose policy
  -- keeps them), return to pending with the expiry they keep, their signals
  -- consumed unless the policy keeps those too. The indexes are the
  -- caller's (remove_from_lane, expiry_sync). It returns the policy's
  -- delay (ms) when it closed the suspension, nil otherwise.
  local function close_susp(e, now, by, keep)
    local sk = e.k.base .. ':susp'
    local s = redis.call('HMGET', sk, 'closed_by', 'wps', 'keep_wps', 'keep_sigs', 'delay')
    if s[1] ~= '' then return nil end
    redis.call('HSET', sk, 'closed_at', S(now), 'closed_by', by)
    keep = keep and s[3] == '1'
    for wp in string.gmatch(s[2], '[^,]+') do
      local wk = key_of(wp)
      local w = redis.call('HMGET', wk, 'state', 'keep_at', 'created_at')
      if w[1] == 'active' then
        if keep then
          local at = N(w[2])
          -- a suspension's fresh waitpoint had none: MaxWaitpointTTL after
          -- its creation
          if at == 0 then at = N(w[3]) + MAX_WAITPOINT_TTL end
          redis.call('HSET', wk, 'state', 'pending', 'expires_at', S(at), 'keep_at', S(at))
          if s[4] ~= '1' then redis.call('DEL', wk .. ':sigs') end
        else
          redis.call('HSET', wk, 'state', 'closed', 'closed_at', S(now), 'closed_by', by)
          e.wp_open = e.wp_open - 1
        end
      end
    end
    return N(s[5])
  end

  -- ends closes what an ending execution holds open (terminate calls
  -- it, with the outcome to): its open suspension with its active
  -- waitpoints (the reason follows the outcome; a timeout closed it
  -- already), and its pending waitpoints ("ended").
  local function ends(e, now, to)
    if e.lifecycle_phase == 'suspended' then
      local by = 'cancelled'
      if to == 'expired' then
        by = 'expired'
      elseif to == 'skipped' then
        by = 'skipped'
      end
      close_susp(e, now, by, false)
    end
    if e.wp_open == 0 then return end
    for _, wp in ipairs(redis.call('ZRANGE', e.k.base .. ':wps', '0', '-1')) do
      local wk = key_of(wp)
      if redis.call('HGET', wk, 'state') == 'pending' then
        redis.call('HSET', wk, 'state', 'closed', 'closed_at', S(now), 'closed_by', 'ended')
        e.wp_open = e.wp_open - 1
      end
    end
    redis.call('ZREM', ks().idx .. 'pending_waitpoint_expiry', e.id)
  end

  wait_kit_cache = { key_of = key_of, expiry_sync = expiry_sync, close_susp = close_susp, ends = ends }
  return wait_kit_cache
end
