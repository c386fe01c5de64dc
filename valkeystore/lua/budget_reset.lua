-- budget_reset: zero a budget's usage now (its ledgers and schedule stay).
-- KEYS: budget
-- ARGV: now id

local nr = redis.call('HGET', K_budget, 'next_reset')
if not nr then return fail('budget_not_found') end
return { 'reset_count', budget_zero(K_budget), 'next_reset', N(nr) }
