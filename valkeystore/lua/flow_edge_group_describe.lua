-- flow_edge_group_describe: a downstream's group policy (absent: all_of),
-- its number of incoming edges and its state (absent before its first
-- edge).
-- KEYS: flow_core members
-- ARGV: downstream

local base = flow_base()
if redis.call('EXISTS', K_flow_core) == 0 then return fail('flow_not_found') end
local bad = flow_member(base, A_downstream, 'Downstream')
if bad then return bad end
return { 'group', redis.call('HGETALL', base .. ':group:' .. A_downstream),
  'edges', redis.call('HLEN', base .. ':in:' .. A_downstream),
  'gstate', redis.call('HGETALL', base .. ':gstate:' .. A_downstream) }
