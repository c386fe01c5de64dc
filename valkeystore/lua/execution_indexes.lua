-- execution_indexes: the names of the indexes that hold an execution. A
-- lane's active index and a worker instance's lease index are what the
-- records say (see keys.go).
-- KEYS: core lanes all lease_expiry attempt_timeout deadline suspended susp_timeout wp_expiry retention
-- ARGV: id

local id = A_id
local names = {}
local function has(key) return redis.call('ZSCORE', key, id) ~= false end
for _, lane in ipairs(redis.call('ZRANGE', K_lanes, '0', '-1')) do
  for _, name in ipairs({ 'eligible', 'delayed', 'terminal', 'suspended' }) do
    if has(lane_key(lane, name)) then names[#names + 1] = 'lane:' .. lane .. ':' .. name end
  end
  for _, name in ipairs(BLOCKED_NAMES) do
    if has(lane_key(lane, name)) then names[#names + 1] = 'lane:' .. lane .. ':' .. name end
  end
end
if has(K_lease_expiry) then names[#names + 1] = 'lease_expiry' end
if has(K_attempt_timeout) then names[#names + 1] = 'attempt_timeout' end
if has(K_deadline) then names[#names + 1] = 'execution_deadline' end
if has(K_suspended) then names[#names + 1] = 'suspended' end
if has(K_susp_timeout) then names[#names + 1] = 'suspension_timeout' end
if has(K_wp_expiry) then names[#names + 1] = 'pending_waitpoint_expiry' end
if has(K_retention) then names[#names + 1] = 'retention' end
local e = the_exec()
if e ~= nil then
  if e.lifecycle_phase == 'active' then names[#names + 1] = 'lane:' .. e.lane .. ':active' end
  if e.lease_id ~= '' then names[#names + 1] = 'worker:' .. e.lease_wi .. ':leases' end
end
if has(K_all) then names[#names + 1] = 'all_executions' end
return { 'indexes', names }
