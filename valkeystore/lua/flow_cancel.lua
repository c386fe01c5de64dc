-- flow_cancel: cancel a flow and, by policy, its members that have not
-- ended (cancel_all) or not started (cancel_pending), in member id order.
-- The members cancelled here resolve no edge (model.FlowCancelParams), so
-- no flow_settle: what terminate listed only leaves the live count.
-- KEYS: flow_core members lanes deadline attempt_timeout lease_expiry
-- ARGV: now policy reason flow

local base = flow_base()
local f = flow_load(base)
if f == nil then return fail('flow_not_found') end
local bad = flow_open(f)
if bad then return bad end
if f.sealed == '1' then
  local st = flow_ended_state(base)
  if st ~= 'open' then return fail('flow_already_terminal', st) end
end
local now = now_ms()
redis.call('HSET', K_flow_core, 'state', 'cancelled', 'cancel_policy', A_policy, 'cancel_reason', A_reason,
  'cancelled_at', S(now), 'last_mutation_at', S(now))
local out = {}
if A_policy ~= 'flow_only' then
  local members = redis.call('ZRANGE', K_members, 0, -1)
  for i = 1, #members do
    local e = load_exec(exec_keys_of(members[i]))
    if e ~= nil and e.lifecycle_phase ~= 'terminal' and (A_policy == 'cancel_all' or e.lifecycle_phase == 'runnable') then
      cancel_exec(e, now, A_reason, 'flow', true)
      save_exec(e)
      out[#out + 1] = members[i]
    end
  end
end
flow_live(base, A_flow, -#ended)
ended = {}
flow_finished_refile(base) -- a finished flow is due when its members are (lib/retention.lua)
return { 'cancelled', out }
