-- flow_create: create a flow; an existing one is left as it is.
-- KEYS: flow_core flow_tags flows
-- ARGV: now flow tags

if redis.call('EXISTS', K_flow_core) == 1 then
  return { 'status', 'already_exists' }
end
local now = S(now_ms())
redis.call('HSET', K_flow_core, 'state', 'open', 'created_at', now, 'last_mutation_at', now,
  'member_count', '0', 'edge_count', '0', 'graph_revision', '0', 'live', '0')
local tags = netstrings(A_tags)
if #tags > 0 then redis.call('HSET', K_flow_tags, unpack(tags)) end
redis.call('ZADD', K_flows, '0', A_flow)
return { 'status', 'created' }
