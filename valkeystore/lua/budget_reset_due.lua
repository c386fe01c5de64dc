-- budget_reset_due: reset up to limit budgets of the partition whose next
-- reset is due, in (due, id) order, each moving to the first time of its
-- schedule after now.
-- KEYS: budgets resets
-- ARGV: now limit

local now, limit = now_ms(), N(A_limit)
local reset = {}
while #reset < limit do
  local head = redis.call('ZRANGE', K_resets, '0', '0', 'WITHSCORES')
  if #head == 0 or N(head[2]) > now then break end
  local id, at = head[1], N(head[2])
  local key = budget_key_of(id)
  local b = redis.call('HMGET', key, 'created_at', 'interval', 'next_reset')
  if not b[1] or N(b[2]) == 0 or N(b[3]) ~= at then
    redis.call('ZREM', K_resets, id) -- not a budget's schedule any more
  else
    budget_zero(key)
    local nr = budget_next_reset(N(b[1]), N(b[2]), now)
    redis.call('HSET', key, 'next_reset', S(nr))
    redis.call('ZADD', K_resets, S(nr), id)
    reset[#reset + 1] = id
  end
end
local head = redis.call('ZRANGE', K_resets, '0', '0', 'WITHSCORES')
local more, next_due = 0, 0
if #head > 0 then
  next_due = N(head[2])
  if next_due <= now then more = 1 end
end
return { 'reset', reset, 'more', more, 'next_due', next_due }
