-- flow_edge_stage: stage the edge upstream → downstream under the graph
-- revision compare-and-set; refuse non-members, duplicates and cycles
-- (graph_reaches, bounded by limit); the downstream must be held. An
-- upstream that has already ended resolves the edge at once (the flow is
-- open, so no group decides).
-- KEYS: flow_core members lanes deadline attempt_timeout lease_expiry
-- ARGV: now edge upstream downstream expected pass_result limit

local base = flow_base()
local f = flow_load(base)
if f == nil then return fail('flow_not_found') end
local bad = flow_open(f) or flow_unsealed(f)
if bad then return bad end
local rev = N(f.graph_revision)
if rev ~= N(A_expected) then
  return fail('stale_graph_revision', 'current:' .. S(rev), 'ExpectedGraphRevision')
end
bad = flow_member(base, A_upstream, 'Upstream') or flow_member(base, A_downstream, 'Downstream')
if bad then return bad end
local edge_key = base .. ':edge:' .. A_edge
if redis.call('EXISTS', edge_key) == 1 then
  return fail('dependency_already_exists', A_edge, 'Edge')
end
local out_key = base .. ':out:' .. A_upstream
local existing = redis.call('HGET', out_key, A_downstream)
if existing then return fail('dependency_already_exists', existing, 'Downstream') end
do
  local e = load_exec(exec_keys_of(A_downstream))
  if e == nil or not flow_kit().held(e) then return downstream_started(e) end
end
local found, exceeded = graph_reaches(base, A_downstream, A_upstream, N(A_limit))
if exceeded then return fail('graph_search_limit', A_limit, 'MaxSearchEdges') end
if found then return fail('cycle_detected', A_upstream, 'Upstream') end
local now = S(now_ms())
rev = rev + 1
redis.call('HSET', edge_key, 'id', A_edge, 'upstream', A_upstream, 'downstream', A_downstream,
  'pass_result', A_pass_result, 'state', 'pending', 'revision', S(rev), 'created_at', now)
redis.call('HSET', out_key, A_downstream, A_edge)
redis.call('HSET', base .. ':in:' .. A_downstream, A_upstream, A_edge)
local kit = flow_kit()
local g = kit.gstate_load(base, A_downstream)
if g == nil then g = { size = 0, succeeded = 0, impossible = 0, state = 'waiting', gen = 0, gens = 0 } end
do
  local e = load_exec(exec_keys_of(A_upstream))
  if e ~= nil and e.lifecycle_phase == 'terminal' then
    kit.edge_resolve(base, A_edge, A_downstream, g, e.terminal_outcome, e.k.base)
  end
end
kit.gstate_save(base, A_downstream, g)
redis.call('HSET', K_flow_core, 'graph_revision', S(rev), 'edge_count', S(N(f.edge_count) + 1),
  'last_mutation_at', now)
return { 'graph_revision', rev }
