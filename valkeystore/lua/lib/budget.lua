-- budget: spend budgets on their budget partition (model.AdmissionStore;
-- keys.go has the keys)
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- Amounts are at most model.MaxBudgetAmount (10^15; MAX_BUDGET_AMOUNT,
-- generated), so a sum of two is an exact Lua number, and S() prints it.

-- A budget B = P:budget:<tag>:<id> is a HASH: def (the definition as
-- BudgetCreate compares it), dims (its limited dimensions, a CSV in name
-- order), h:<dim> and s:<dim> (limits), u:<dim> (the usage of each
-- dimension reported so far: a reset or a release leaves it at 0),
-- created_at, interval, action, next_reset, reset_count, hard_breaches,
-- soft_breaches, breached_at. B:spend:<execution> HASH is an execution's
-- ledger (dim → amount), B:dedup:<key> STRING a report's dedup record
-- (its expiry, ms).

-- bks is the keyspace of the script's budget partition, parsed from
-- K_budgets ("<prefix>:idx:<tag>:budgets").
local bks_cache
local function bks()
  if bks_cache == nil then
    local pfx, tag = string.match(K_budgets, '^(.*):idx:(%b{}):budgets$')
    if pfx == nil then error('valkeystore: malformed budgets key') end
    bks_cache = { pfx = pfx, tag = tag }
  end
  return bks_cache
end

local function budget_key_of(id)
  return bks().pfx .. ':budget:' .. bks().tag .. ':' .. id
end

-- budget_over is the first of the limited dimensions csv (the budget's
-- dims field), in name order, whose usage is at or above its positive
-- hard limit ('' for none).
local function budget_over(key, csv)
  local dims = {}
  for d in string.gmatch(csv, '[^,]+') do dims[#dims + 1] = d end
  if #dims == 0 then return '' end
  local f = {}
  for i, d in ipairs(dims) do f[2 * i - 1], f[2 * i] = 'h:' .. d, 'u:' .. d end
  local v = redis.call('HMGET', key, unpack(f))
  for i, d in ipairs(dims) do
    local h = N(v[2 * i - 1])
    if h > 0 and N(v[2 * i]) >= h then return d end
  end
  return ''
end

-- budget_exhausted is budget_over of the budget at key ('' for a missing
-- budget).
local function budget_exhausted(key)
  return budget_over(key, redis.call('HGET', key, 'dims') or '')
end

-- budget_zero zeroes the usage of every dimension reported so far (the
-- dimensions stay, at 0) and counts the reset.
local function budget_zero(key)
  local all = redis.call('HKEYS', key)
  local u = {}
  for _, f in ipairs(all) do
    if string.sub(f, 1, 2) == 'u:' then u[#u + 1], u[#u + 2] = f, '0' end
  end
  if #u > 0 then redis.call('HSET', key, unpack(u)) end
  return redis.call('HINCRBY', key, 'reset_count', 1)
end

-- budget_next_reset is the first time of the schedule (created +
-- k·interval, k ≥ 1) after now.
local function budget_next_reset(created, iv, now)
  if now < created then return created + iv end
  local k = math.floor((now - created) / iv) + 1
  while created + (k - 1) * iv > now do k = k - 1 end
  while created + k * iv <= now do k = k + 1 end
  return created + k * iv
end
