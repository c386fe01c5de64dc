-- signal_deliver: deliver a signal to a waitpoint named by a verified
-- token (model.SignalDeliverParams): a pending waitpoint buffers it; an
-- active one records it for its open suspension, whose condition ignores
-- it, counts it, or resumes the execution.
-- KEYS: core lanes feed feed_seq
-- ARGV: now id waitpoint created_at signal name source payload idem dedup_ttl gc_slack

local now = now_ms()

-- feed_add records the delivery of signal sig with effect in the
-- partition's signal feed.
local function feed_add(sig, effect)
  local seq = redis.call('INCR', K_feed_seq)
  redis.call('XADD', K_feed, 'MAXLEN', S(SIGNAL_FEED_LEN), '0-' .. seq, 'x', A_id, 'w', A_waitpoint, 's', sig,
    'e', effect, 't', S(now))
end

local e = the_exec()
if e == nil then return fail('execution_not_found') end
local wk = wp_key(A_waitpoint)
local w = redis.call('HMGET', wk, 'exec', 'state', 'created_at', 'limit')
if w[1] ~= e.id then return fail('waitpoint_not_found', '', 'Waitpoint') end
if w[3] ~= A_created_at then return fail('invalid_token') end
local base = e.k.base
-- a signal id the execution still keeps: the same delivery applied twice
local kept = redis.call('HGET', base .. ':sig', A_signal)
if kept then
  local f = netstrings(kept)
  return { 'signal', f[2], 'effect', f[7], 'ignored_reason', f[8], 'state', vector(e), 'delay_until', 0,
    'replayed', 1 }
end
local dk = wk .. ':dedup'
if A_idem ~= '' then
  local d = redis.call('HGET', dk, A_idem)
  if d then
    local c = string.find(d, ':', 1, true)
    if N(string.sub(d, 1, c - 1)) > now then
      feed_add(string.sub(d, c + 1), 'duplicate')
      return { 'signal', string.sub(d, c + 1), 'effect', 'duplicate', 'ignored_reason', '',
        'state', vector(e), 'delay_until', 0 }
    end
  end
end
if w[2] == 'closed' then return fail('waitpoint_closed') end
if redis.call('LLEN', wk .. ':sigs') >= N(w[4]) then return fail('signal_limit_exceeded') end

local sk = base .. ':susp'
local effect, ignored = 'buffered', ''
local sig = { id = A_signal, wp = A_waitpoint, name = A_name, source = A_source }
if w[2] == 'active' then
  -- an active waitpoint's suspension is open
  local s = redis.call('HMGET', sk, 'cond', 'wp')
  local c, own = cjson.decode(s[1]), s[2]
  if c.k == 'operator_only' then
    effect, ignored = 'ignored', 'operator_only'
  elseif c.k == 'timeout_only' then
    effect, ignored = 'ignored', 'timeout_only'
  elseif not cond_accepts(c, own, sig) then
    effect, ignored = 'ignored', 'not_in_condition'
  else
    local sigs = sigs_load(base, redis.call('LRANGE', sk .. ':sigs', '0', '-1'))
    sigs[#sigs + 1] = sig
    if cond_satisfied(c, own, sigs) then effect = 'resumed' else effect = 'accepted' end
  end
end
local seq = redis.call('INCR', base .. ':sigseq')
redis.call('HSET', base .. ':sig', A_signal, sig_encode({ S(seq), A_signal, A_waitpoint, A_name, A_source,
  A_idem, effect, ignored, S(now) }))
if A_payload ~= '' then redis.call('HSET', base .. ':sigpay', A_signal, A_payload) end
redis.call('RPUSH', wk .. ':sigs', A_signal)
if w[2] == 'active' then redis.call('RPUSH', sk .. ':sigs', A_signal) end
if A_idem ~= '' then
  local ttl = N(A_dedup_ttl)
  redis.call('HSET', dk, A_idem, S(now + ttl) .. ':' .. A_signal)
  -- the server's TTL only collects garbage: expiry is decided against now
  local gc = ttl + N(A_gc_slack)
  if redis.call('PTTL', dk) < gc then redis.call('PEXPIRE', dk, S(gc)) end
end
feed_add(A_signal, effect)
e.last_mutation_at = now
local until_ms = 0
if effect == 'resumed' then until_ms = susp_resume(e, now, 'signal') end
save_exec(e)
return { 'signal', A_signal, 'effect', effect, 'ignored_reason', ignored, 'state', vector(e),
  'delay_until', until_ms }
