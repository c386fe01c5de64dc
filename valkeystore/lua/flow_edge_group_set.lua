-- flow_edge_group_set: set the policy of a downstream's incoming edges,
-- only before the first of them is staged.
-- KEYS: flow_core members
-- ARGV: now downstream kind quorum on_satisfied

local base = flow_base()
local f = flow_load(base)
if f == nil then return fail('flow_not_found') end
local bad = flow_open(f) or flow_unsealed(f)
if bad then return bad end
bad = flow_member(base, A_downstream, 'Downstream')
if bad then return bad end
local n = redis.call('HLEN', base .. ':in:' .. A_downstream)
if n > 0 then return fail('edge_group_fixed', 'edges:' .. S(n), 'Downstream') end
local key = base .. ':group:' .. A_downstream
local cur = redis.call('HMGET', key, 'kind', 'quorum', 'on_satisfied')
if cur[1] == A_kind and cur[2] == A_quorum and cur[3] == A_on_satisfied then
  return { 'status', 'already_set' }
end
redis.call('HSET', key, 'kind', A_kind, 'quorum', A_quorum, 'on_satisfied', A_on_satisfied)
redis.call('HSET', K_flow_core, 'last_mutation_at', S(now_ms()))
return { 'status', 'set' }
