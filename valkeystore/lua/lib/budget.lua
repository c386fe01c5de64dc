-- budget: spend budgets on their budget partition (model.AdmissionStore;
-- keys.go has the keys)
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- Budget amounts reach 2·10^18, past a double's exact integers, so they
-- travel and are stored as decimal text and computed on as two base-10^9
-- limbs { high, low }.
local function am(s)
  if s == nil or s == false or s == '' then return { 0, 0 } end
  local n = #s
  if n <= 9 then return { 0, tonumber(s) } end
  return { tonumber(string.sub(s, 1, n - 9)), tonumber(string.sub(s, n - 8)) }
end

local function am_str(a)
  if a[1] == 0 then return string.format('%d', a[2]) end
  return string.format('%d%09d', a[1], a[2])
end

local function am_add(a, b)
  local h, l = a[1] + b[1], a[2] + b[2]
  if l >= 1000000000 then h, l = h + 1, l - 1000000000 end
  return { h, l }
end

-- am_sub is a − b, or nil when that is not positive.
local function am_sub(a, b)
  local h, l = a[1] - b[1], a[2] - b[2]
  if l < 0 then h, l = h - 1, l + 1000000000 end
  if h < 0 or (h == 0 and l == 0) then return nil end
  return { h, l }
end

-- am_gt reports a > b.
local function am_gt(a, b)
  if a[1] ~= b[1] then return a[1] > b[1] end
  return a[2] > b[2]
end

local function am_pos(a)
  return a[1] > 0 or a[2] > 0
end

-- AM_MAX is model.MaxBudgetAmount: usage and ledgers saturate there.
local AM_MAX = { 1000000000, 0 }

-- A budget B = P:budget:<tag>:<id> is a HASH: def (the definition as
-- BudgetCreate compares it), dims (its limited dimensions, a CSV in name
-- order), h:<dim> and s:<dim> (limits), u:<dim> (the non-zero usage),
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

-- budget_exhausted is the first limited dimension, in name order, whose
-- usage is at or above its positive hard limit ('' for none).
local function budget_exhausted(key)
  local dims = {}
  for d in string.gmatch(redis.call('HGET', key, 'dims') or '', '[^,]+') do dims[#dims + 1] = d end
  if #dims == 0 then return '' end
  local f = {}
  for i, d in ipairs(dims) do f[2 * i - 1], f[2 * i] = 'h:' .. d, 'u:' .. d end
  local v = redis.call('HMGET', key, unpack(f))
  for i, d in ipairs(dims) do
    local h = am(v[2 * i - 1])
    if am_pos(h) and not am_gt(h, am(v[2 * i])) then return d end
  end
  return ''
end

-- budget_zero zeroes a budget's usage and counts the reset.
local function budget_zero(key)
  local all = redis.call('HKEYS', key)
  local u = {}
  for _, f in ipairs(all) do
    if string.sub(f, 1, 2) == 'u:' then u[#u + 1] = f end
  end
  if #u > 0 then redis.call('HDEL', key, unpack(u)) end
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
