-- flow: flows, their members, dependency edges and edge groups
--
-- Part of the library put in front of the scripts: see lua/README.md.
-- The keys (valkeystore/keys.go): F = <prefix>:flow:<tag>:<flow>, with
-- F:core, F:tags, F:members, F:edge:<edge>, F:out:<up> (downstream → edge),
-- F:in:<down> (upstream → edge), F:group:<down>; a member's flow in
-- X:flow; the partition's flows in I:flows. memstore/flow.go is the Go half.

-- flow_base is the script's flow, from K_flow_core ("F:core").
local function flow_base()
  return string.sub(K_flow_core, 1, -6)
end

-- flow_base_of is the base of flow fid in the partition of K_core (an
-- execution's "<prefix>:exec:<tag>:<id>:core").
local function flow_base_of(fid)
  local pfx, tag = string.match(K_core, '^(.*):exec:(%b{}):')
  if pfx == nil then error('valkeystore: malformed core key') end
  return pfx .. ':flow:' .. tag .. ':' .. fid
end

-- flow_load reads F:core as a table, nil when the flow does not exist.
local function flow_load(base)
  local raw = redis.call('HGETALL', base .. ':core')
  if #raw == 0 then return nil end
  return hash_to_table(raw)
end

-- flow_open refuses a terminal flow (an error reply, or nil).
local function flow_open(f)
  if f.state ~= 'open' then return fail('flow_already_terminal', f.state) end
  return nil
end

-- flow_member refuses an execution that is not a member, naming the
-- parameter (an error reply, or nil).
local function flow_member(base, id, field)
  if redis.call('ZSCORE', base .. ':members', id) == false then
    return fail('execution_not_in_flow', id, field)
  end
  return nil
end

-- graph_reaches reports whether target is reachable from start along the
-- outgoing edges. It visits every reachable node once and does not stop
-- on finding target, so its outcome does not depend on the hash order it
-- walks in; exceeded is true (and found false) when the reachable edges
-- number more than limit.
local function graph_reaches(base, start, target, limit)
  local seen = { [start] = true }
  local stack = { start }
  local examined, found = 0, false
  while #stack > 0 do
    local n = stack[#stack]
    stack[#stack] = nil
    if n == target then found = true end
    local outs = redis.call('HKEYS', base .. ':out:' .. n)
    examined = examined + #outs
    if examined > limit then return false, true end
    for i = 1, #outs do
      local d = outs[i]
      if not seen[d] then
        seen[d] = true
        stack[#stack + 1] = d
      end
    end
  end
  return found, false
end

-- edge_list is the edges of one end (ends: HGETALL of F:out:<up> or
-- F:in:<down>, other end → edge id), each edge's hash as stored; Go
-- orders them by id.
local function edge_list(base, ends)
  local out = {}
  for i = 2, #ends, 2 do
    out[#out + 1] = redis.call('HGETALL', base .. ':edge:' .. ends[i])
  end
  return out
end
