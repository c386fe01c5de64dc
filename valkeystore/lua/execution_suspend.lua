-- execution_suspend: suspend the caller's running attempt until its
-- resume condition holds (model.ExecutionSuspendParams); the buffered
-- signals of the waitpoints it binds may satisfy it at once. The
-- execution's current or last suspension id replays.
-- KEYS: core history lanes lease_expiry attempt_timeout
-- ARGV: now id lease_id epoch attempt_id suspension waitpoint use_pending others reason blocking_reason condition timeout_at behavior delay keep_wps keep_sigs signal_limit

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local base = e.k.base
local sk = base .. ':susp'
if redis.call('HGET', sk, 'id') == A_suspension then return susp_reply(e, sk, true) end
local err = validate_lease(e, fence_arg(), now)
if err ~= nil then return err end

-- the waitpoints it binds, its own first: all checked before any write
local own = A_waitpoint
local bound = { own }
local ow = redis.call('HMGET', wp_key(own), 'exec', 'state')
if A_use_pending == '1' then
  if ow[1] ~= e.id then return fail('waitpoint_not_found', '', 'Waitpoint') end
  if ow[2] ~= 'pending' then return fail('waitpoint_not_pending', '', 'Waitpoint') end
else
  if ow[1] then return fail('invalid_input', 'exists', 'Waitpoint') end
  if e.wp_open >= MAX_OPEN_WAITPOINTS then return fail('waitpoint_limit_exceeded') end
end
for wp in string.gmatch(A_others, '[^,]+') do
  local w = redis.call('HMGET', wp_key(wp), 'exec', 'state')
  if w[1] ~= e.id then return fail('waitpoint_not_found', wp, 'Condition') end
  if w[2] ~= 'pending' then return fail('waitpoint_not_pending', wp, 'Condition') end
  bound[#bound + 1] = wp
end

drop_closed(e)
if A_use_pending ~= '1' then
  redis.call('HSET', wp_key(own), 'id', own, 'exec', e.id, 'state', 'active', 'created_at', S(now),
    'expires_at', '0', 'keep_at', '0', 'limit', A_signal_limit, 'susp', A_suspension,
    'closed_at', '0', 'closed_by', '')
  redis.call('ZADD', base .. ':wps', S(now), own)
  e.wp_open = e.wp_open + 1
end
-- bind them; their buffered signals are the suspension's first, in
-- delivery order
local ids = {}
for _, wp in ipairs(bound) do
  local wk = wp_key(wp)
  redis.call('HSET', wk, 'state', 'active', 'susp', A_suspension, 'expires_at', '0')
  for _, id in ipairs(redis.call('LRANGE', wk .. ':sigs', '0', '-1')) do ids[#ids + 1] = id end
end
local sigs = sigs_load(base, ids)
table.sort(sigs, function(a, b) return a.seq < b.seq end)
for i = 1, #sigs do ids[i] = sigs[i].id end
if #ids > 0 then chunked('RPUSH', sk .. ':sigs', ids) end
redis.call('HSET', sk, 'id', A_suspension, 'attempt', S(e.cur_attempt), 'reason', A_reason,
  'cond', A_condition, 'wp', own, 'wps', table.concat(bound, ','), 'suspended_at', S(now),
  'timeout_at', A_timeout_at, 'behavior', A_behavior, 'delay', A_delay, 'keep_wps', A_keep_wps,
  'keep_sigs', A_keep_sigs, 'escalated', '0', 'closed_at', '0', 'closed_by', '', 'outcome', 'suspended')
e.last_mutation_at = now

if cond_satisfied(cjson.decode(A_condition), own, sigs) then
  -- the attempt keeps its lease and goes on
  redis.call('HSET', sk, 'outcome', 'already_satisfied')
  susp_close(e, now, 'satisfied', false)
else
  if e.cur_attempt >= 0 then
    redis.call('HSET', attempt_key(e, e.cur_attempt), 'status', 'suspended')
  end
  remove_from_lane(e)
  release_lease(e, now, 'released', 'suspend')
  e.delay_until = 0
  set_state(e, now, 'suspended', 'unowned', 'not_applicable', A_blocking_reason, 'none', 'attempt_interrupted')
  local timeout_at = N(A_timeout_at)
  local score = timeout_at
  if score == 0 then score = 9999999999999 end
  redis.call('ZADD', lane_key(e.lane, 'suspended'), S(score), e.id)
  redis.call('ZADD', ks().idx .. 'suspended', '0', e.id)
  if timeout_at ~= 0 then redis.call('ZADD', ks().idx .. 'suspension_timeout', S(timeout_at), e.id) end
end
wp_expiry_sync(e)
save_exec(e)
return susp_reply(e, sk, false)
