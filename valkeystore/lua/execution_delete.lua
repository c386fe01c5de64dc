-- execution_delete: delete a terminal execution with everything it owns
-- (model.ExecutionDeleteParams; memstore/retention_ops.go is the same step):
-- its record, payload, result, tags, attempts, lease history, streams,
-- suspension, signals, waitpoints and index entries. With due (the
-- retention scanner), only when its I:retention entry is due, and an entry
-- that no longer applies is dropped instead of refused.
-- KEYS: core payload result tags history lanes all deadline attempt_timeout lease_expiry retention
-- ARGV: now id due

local now = now_ms()
local due = A_due == '1'
local function clean(outcome)
  redis.call('ZREM', K_retention, A_id)
  return { 'outcome', outcome }
end
local e = the_exec()
if e == nil then
  if due then return clean('not_found_cleaned') end
  return fail('execution_not_found')
end
if e.lifecycle_phase ~= 'terminal' then
  if due then return clean('not_terminal_cleaned') end
  return fail('execution_not_terminal')
end
local base = e.k.base
if redis.call('EXISTS', base .. ':flow') == 1 then
  if due then return clean('in_flow_cleaned') end
  return fail('execution_in_flow')
end
if due then
  local at = redis.call('ZSCORE', K_retention, e.id)
  if not at or N(at) > now then return { 'outcome', 'not_yet_due' } end
end

local budgets = e.budgets
-- the idempotency key, while it still names this execution
if e.idem_key ~= '' then
  local ik = ks().pfx .. ':idem:' .. ks().tag .. ':' .. e.ns .. ':' .. e.idem_key
  if redis.call('HGET', ik, 'id') == e.id then redis.call('DEL', ik) end
end
if e[3] then count_add(e, e[3], -1) end
remove_from_lane(e)
for _, k in ipairs({ K_all, K_deadline, K_attempt_timeout, K_lease_expiry, ks().idx .. 'suspended',
  ks().idx .. 'suspension_timeout', ks().idx .. 'pending_waitpoint_expiry' }) do
  redis.call('ZREM', k, e.id)
end
local doomed = { K_core, K_payload, K_result, K_tags, K_history, base .. ':wps', base .. ':susp',
  base .. ':susp:sigs', base .. ':sig', base .. ':sigpay', base .. ':sigseq' }
for i = 0, e.total_attempts - 1 do
  local sk = base .. ':stream:' .. S(i)
  doomed[#doomed + 1] = base .. ':attempt:' .. S(i)
  doomed[#doomed + 1] = sk
  doomed[#doomed + 1] = sk .. ':meta'
end
for _, wp in ipairs(redis.call('ZRANGE', base .. ':wps', '0', '-1')) do
  local wk = ks().pfx .. ':wp:' .. ks().tag .. ':' .. wp
  doomed[#doomed + 1] = wk
  doomed[#doomed + 1] = wk .. ':sigs'
  doomed[#doomed + 1] = wk .. ':dedup'
end
-- UNLINK frees large values (long streams) off the script's thread
for i = 1, #doomed, 64 do
  redis.call('UNLINK', unpack(doomed, i, math.min(i + 63, #doomed)))
end
return { 'outcome', 'deleted', 'budgets', budgets }
