-- execution_delete: delete a terminal execution with everything it owns
-- (model.ExecutionDeleteParams; memstore/retention_ops.go is the same step;
-- lib/retention.lua delete_exec does the deleting). With due (the
-- retention scanner), only when its I:retention entry is due, and an entry
-- that no longer applies is dropped instead of refused; a flow member's
-- due entry is its flow's (in_flow: the caller goes on with flow_delete).
-- KEYS: core lanes retention
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
local flow = redis.call('GET', e.k.base .. ':flow')
if flow and not due then return fail('execution_in_flow') end
if due then
  local at = redis.call('ZSCORE', K_retention, e.id)
  if not at or N(at) > now then return { 'outcome', 'not_yet_due' } end
  if flow then return { 'outcome', 'in_flow', 'flow', flow } end
end
return { 'outcome', 'deleted', 'budgets', delete_exec(e) }
