-- budget_reconcile: check up to limit budgets of the partition's index in
-- id order after after (exclusive; '' from the start): mark those with a
-- dimension at or above a positive hard limit (breached_at = now when
-- unmarked), unmark the others, drop entries without a definition.
-- KEYS: budgets
-- ARGV: now after limit

local now, limit = now_ms(), N(A_limit)
local from = '-'
if A_after ~= '' then from = '(' .. A_after end
local ids = redis.call('ZRANGEBYLEX', K_budgets, from, '+', 'LIMIT', '0', S(limit + 1))
local more = 0
if #ids > limit then
  more = 1
  ids[#ids] = nil
end
local breached, cleared, dropped = {}, {}, {}
for _, id in ipairs(ids) do
  local key = budget_key_of(id)
  local at = redis.call('HGET', key, 'breached_at')
  if not at then
    redis.call('ZREM', K_budgets, id)
    dropped[#dropped + 1] = id
  else
    local ex = budget_exhausted(key) ~= ''
    if ex and N(at) == 0 then
      redis.call('HSET', key, 'breached_at', S(now))
      breached[#breached + 1] = id
    elseif not ex and N(at) ~= 0 then
      redis.call('HSET', key, 'breached_at', '0')
      cleared[#cleared + 1] = id
    end
  end
end
local last = ''
if more == 1 then last = ids[#ids] end
return { 'checked', #ids, 'breached', breached, 'cleared', cleared, 'dropped', dropped, 'last', last, 'more', more }
