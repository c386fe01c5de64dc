-- waitpoint_expire: close the pending waitpoints of an execution whose
-- expiry passed (model.WaitpointExpireParams) and re-score its
-- pending-waitpoint expiry entry; an entry of an execution that no longer
-- exists is dropped.
-- KEYS: core lanes wp_expiry
-- ARGV: now id

local now = now_ms()
local e = the_exec()
if e == nil then
  redis.call('ZREM', K_wp_expiry, A_id)
  return { 'closed', 0, 'next_due', 0 }
end
local closed = 0
if e.wp_open > 0 then
  for _, wp in ipairs(redis.call('ZRANGE', e.k.base .. ':wps', '0', '-1')) do
    local wk = wp_key(wp)
    local w = redis.call('HMGET', wk, 'state', 'expires_at')
    if w[1] == 'pending' and N(w[2]) <= now then
      redis.call('HSET', wk, 'state', 'closed', 'closed_at', S(now), 'closed_by', 'waitpoint_expired')
      e.wp_open = e.wp_open - 1
      closed = closed + 1
    end
  end
end
if closed > 0 then
  e.last_mutation_at = now
  save_exec(e)
end
return { 'closed', closed, 'next_due', wp_expiry_sync(e) }
