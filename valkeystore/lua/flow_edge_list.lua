-- flow_edge_list: an execution's outgoing (dir "out") or incoming ("in")
-- edges; none for an execution in no flow.
-- KEYS: core exec_flow lanes
-- ARGV: dir id

if the_exec() == nil then return fail('execution_not_found') end
local fid = redis.call('GET', K_exec_flow)
if not fid then return { 'flow', '', 'edges', {} } end
local base = flow_base_of(fid)
local ends = redis.call('HGETALL', base .. ':' .. A_dir .. ':' .. A_id)
return { 'flow', fid, 'edges', edge_list(base, ends) }
