-- flow_add_member: add an execution of the flow's partition to the flow
-- (a mutation of the execution too: its flow changes); a runnable one is
-- held until the flow is sealed.
-- KEYS: flow_core members core exec_flow lanes deadline attempt_timeout lease_expiry
-- ARGV: now flow id

local f = flow_load(flow_base())
if f == nil then return fail('flow_not_found') end
local bad = flow_open(f)
if bad then return bad end
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local cur = redis.call('GET', K_exec_flow)
if cur then
  if cur ~= A_flow then return fail('execution_already_in_flow', cur, 'Execution') end
  return { 'status', 'already_member', 'member_count', N(f.member_count), 'graph_revision', N(f.graph_revision) }
end
bad = flow_unsealed(f)
if bad then return bad end
-- a terminal execution's record is frozen (replay aside), and its outcome
-- could resolve no edge
if e.lifecycle_phase == 'terminal' then return not_active(e) end
local now = now_ms()
e.last_mutation_at = now
if e.lifecycle_phase == 'runnable' then flow_kit().hold(e, now, e.attempt_state) end
local count, rev = flow_join(flow_base(), A_flow, e, now)
save_exec(e)
return { 'status', 'added', 'member_count', count, 'graph_revision', rev }
