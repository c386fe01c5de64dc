-- budget_report: add usage to a budget (model.BudgetReportParams): every
-- delta's hard check first, in name order, then all apply (usage and, with
-- execution, its ledger, saturating at model.MaxBudgetAmount), then the
-- first soft limit passed in name order. dims and deltas are
-- comma-separated, in name order (Go sorts them).
-- KEYS: budget
-- ARGV: now id dims deltas dedup_key execution dedup_ttl gc_slack

local now = now_ms()
local b = redis.call('HMGET', K_budget, 'def', 'action')
if not b[1] then return fail('budget_not_found') end
local action = b[2]
local dkey = nil
if A_dedup_key ~= '' then
  dkey = K_budget .. ':dedup:' .. A_dedup_key
  local exp = redis.call('GET', dkey)
  if exp and now < N(exp) then
    return { 'outcome', 'already_applied', 'dimension', '', 'usage', 0, 'limit', 0, 'action', action }
  end
end
local dims, deltas = {}, {}
for d in string.gmatch(A_dims, '[^,]+') do dims[#dims + 1] = d end
for v in string.gmatch(A_deltas, '[^,]+') do deltas[#deltas + 1] = N(v) end
local f = {}
for i, d in ipairs(dims) do
  f[3 * i - 2], f[3 * i - 1], f[3 * i] = 'h:' .. d, 's:' .. d, 'u:' .. d
end
local v = redis.call('HMGET', K_budget, unpack(f))
local usage = {}
for i, d in ipairs(dims) do
  local h = N(v[3 * i - 2])
  local u = N(v[3 * i]) + deltas[i]
  if h > 0 and u > h then
    redis.call('HINCRBY', K_budget, 'hard_breaches', 1)
    return { 'outcome', 'hard_breach', 'dimension', d, 'usage', u, 'limit', h, 'action', action }
  end
  usage[i] = u
end
local set = {}
local outcome, sd, su, sl = 'applied', '', 0, 0
for i, d in ipairs(dims) do
  local u = usage[i]
  if u > MAX_BUDGET_AMOUNT then u = MAX_BUDGET_AMOUNT end
  set[2 * i - 1], set[2 * i] = 'u:' .. d, S(u)
  local s = N(v[3 * i - 1])
  if outcome == 'applied' and s > 0 and u > s then
    outcome, sd, su, sl = 'soft_breach', d, u, s
  end
end
redis.call('HSET', K_budget, unpack(set))
if outcome == 'soft_breach' then redis.call('HINCRBY', K_budget, 'soft_breaches', 1) end
if A_execution ~= '' then
  local lk = K_budget .. ':spend:' .. A_execution
  local cur = redis.call('HMGET', lk, unpack(dims))
  local ls = {}
  for i, d in ipairs(dims) do
    local x = N(cur[i]) + deltas[i]
    if x > MAX_BUDGET_AMOUNT then x = MAX_BUDGET_AMOUNT end
    ls[2 * i - 1], ls[2 * i] = d, S(x)
  end
  redis.call('HSET', lk, unpack(ls))
end
if dkey then
  local ttl = N(A_dedup_ttl)
  redis.call('SET', dkey, S(now + ttl), 'PX', S(ttl + N(A_gc_slack)))
end
return { 'outcome', outcome, 'dimension', sd, 'usage', su, 'limit', sl, 'action', action }
