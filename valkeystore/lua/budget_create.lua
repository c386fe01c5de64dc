-- budget_create: create a budget on its budget partition, or find it
-- created with the same definition (def, which Go builds: an existing
-- budget with another is an idempotency conflict). limits holds each
-- dimension as "<dim>=<hard>/<soft>", comma-separated, in name order.
-- KEYS: budget budgets resets
-- ARGV: now id def limits interval action

local now = now_ms()
local cur = redis.call('HGET', K_budget, 'def')
if cur then
  if cur ~= A_def then return fail('idempotency_key_conflict') end
  return { 'created', 0 }
end
local iv = N(A_interval)
local next_reset = 0
if iv > 0 then next_reset = now + iv end
local f = { 'def', A_def, 'created_at', S(now), 'interval', S(iv), 'action', A_action,
  'next_reset', S(next_reset), 'reset_count', '0', 'hard_breaches', '0', 'soft_breaches', '0',
  'breached_at', '0' }
local dims = {}
for d, h, s in string.gmatch(A_limits, '([^,=]+)=(%d+)/(%d+)') do
  dims[#dims + 1] = d
  local n = #f
  f[n + 1], f[n + 2], f[n + 3], f[n + 4] = 'h:' .. d, h, 's:' .. d, s
end
local n = #f
f[n + 1], f[n + 2] = 'dims', table.concat(dims, ',')
redis.call('HSET', K_budget, unpack(f))
redis.call('ZADD', K_budgets, '0', A_id)
if iv > 0 then redis.call('ZADD', K_resets, S(next_reset), A_id) end
return { 'created', 1 }
