-- budget_release: give back an execution's ledger: each dimension's usage
-- drops by its charge (not below 0) and the ledger goes; with forget, only
-- the ledger goes.
-- KEYS: budget
-- ARGV: now id execution forget

if redis.call('HEXISTS', K_budget, 'def') == 0 then return fail('budget_not_found') end
local lk = K_budget .. ':spend:' .. A_execution
local l = redis.call('HGETALL', lk)
if #l == 0 then return { 'released', 0, 'returned', {} } end
redis.call('DEL', lk)
-- forget (a deleted execution's ledger): the usage stays
if A_forget == '1' then return { 'released', 1, 'returned', l } end
for i = 1, #l, 2 do
  local f = 'u:' .. l[i]
  local u = N(redis.call('HGET', K_budget, f)) - N(l[i + 1])
  if u < 0 then u = 0 end
  redis.call('HSET', K_budget, f, S(u))
end
return { 'released', 1, 'returned', l }
