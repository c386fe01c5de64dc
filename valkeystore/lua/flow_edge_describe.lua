-- flow_edge_describe: one edge of a flow.
-- KEYS: flow_core
-- ARGV: edge

if redis.call('EXISTS', K_flow_core) == 0 then return fail('flow_not_found') end
local edge = redis.call('HGETALL', flow_base() .. ':edge:' .. A_edge)
if #edge == 0 then return fail('edge_not_found') end
return { 'edge', edge }
