-- worker: the worker registry
--
-- Part of the library put in front of the scripts: see lua/README.md.

local function hash_to_table(raw)
  local t = {}
  for i = 1, #raw, 2 do t[raw[i]] = raw[i + 1] end
  return t
end

-- worker_key derives a worker record's key from K_workers
-- ("<prefix>:idx:<tag>:workers").
local function worker_key(wi)
  local pfx, tag = string.match(K_workers, '^(.*):idx:(%b{}):workers$')
  if pfx == nil then error('valkeystore: malformed workers key') end
  return pfx .. ':worker:' .. tag .. ':' .. wi
end

local function worker_load(key)
  local raw = redis.call('HGETALL', key)
  if #raw == 0 then return nil end
  return hash_to_table(raw)
end

local function worker_alive(w, now)
  return N(w.expires_at) > now
end
