-- budget_status: a budget's hash as it stands and, when execution is set,
-- that execution's ledger (Go reads the fields: budget.lua).
-- KEYS: budget
-- ARGV: now execution

local all = redis.call('HGETALL', K_budget)
if #all == 0 then return fail('budget_not_found') end
local spend = {}
if A_execution ~= '' then spend = redis.call('HGETALL', K_budget .. ':spend:' .. A_execution) end
return { 'fields', all, 'spend', spend }
