-- waitpoint_create: a pending waitpoint of the caller's running attempt
-- (model.WaitpointCreateParams); a retry while it is still pending
-- replays.
-- KEYS: core lanes
-- ARGV: now id lease_id epoch attempt_id waitpoint expires_at signal_limit

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local err = validate_lease(e, fence_arg(), now)
if err ~= nil then return err end
local wk = wp_key(A_waitpoint)
local w = redis.call('HMGET', wk, 'exec', 'state', 'created_at')
if w[1] then
  if w[1] == e.id and w[2] == 'pending' then return { 'created_at', N(w[3]), 'replayed', 1 } end
  return fail('invalid_input', 'exists', 'Waitpoint')
end
if e.wp_open >= MAX_OPEN_WAITPOINTS then return fail('waitpoint_limit_exceeded') end
redis.call('HSET', wk, 'id', A_waitpoint, 'exec', e.id, 'state', 'pending', 'created_at', S(now),
  'expires_at', A_expires_at, 'keep_at', A_expires_at, 'limit', A_signal_limit, 'susp', '',
  'closed_at', '0', 'closed_by', '')
redis.call('ZADD', e.k.base .. ':wps', S(now), A_waitpoint)
e.wp_open = e.wp_open + 1
e.last_mutation_at = now
save_exec(e)
wp_expiry_sync(e)
return { 'created_at', now, 'replayed', 0 }
