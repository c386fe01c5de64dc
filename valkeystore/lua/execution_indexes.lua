-- execution_indexes: the names of the indexes that hold an execution.
-- KEYS: lanes all lease_expiry attempt_timeout deadline lease_workers
-- ARGV: id

local id = A.id
local names = {}
local function has(key) return redis.call('ZSCORE', key, id) ~= false end
for _, lane in ipairs(redis.call('ZRANGE', K.lanes, '0', '-1')) do
  for _, name in ipairs({ 'eligible', 'delayed', 'active', 'terminal', 'suspended' }) do
    if has(lane_key(lane, name)) then names[#names + 1] = 'lane:' .. lane .. ':' .. name end
  end
  for _, name in ipairs(BLOCKED_NAMES) do
    if has(lane_key(lane, name)) then names[#names + 1] = 'lane:' .. lane .. ':' .. name end
  end
end
if has(K.lease_expiry) then names[#names + 1] = 'lease_expiry' end
if has(K.attempt_timeout) then names[#names + 1] = 'attempt_timeout' end
if has(K.deadline) then names[#names + 1] = 'execution_deadline' end
for _, wi in ipairs(redis.call('SMEMBERS', K.lease_workers)) do
  if redis.call('SISMEMBER', worker_leases_key(wi), id) == 1 then
    names[#names + 1] = 'worker:' .. wi .. ':leases'
  end
end
if has(K.all) then names[#names + 1] = 'all_executions' end
return ok({ indexes = names })
