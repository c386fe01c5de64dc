-- flow_delete: delete a finished flow with all its members in one step
-- (model.FlowDeleteParams; memstore/retention_ops.go is the same step):
-- F:core, F:tags, F:members, every F:edge, F:out, F:in, F:group and
-- F:gstate, the flow's index entries, and each member through delete_exec
-- (lib/retention.lua), as execution_delete deletes one. With due (the
-- retention scanner), only once the flow's retention is due; otherwise its
-- members' I:retention entries become one, due when the flow is.
-- KEYS: flow_core members lanes
-- ARGV: now flow due max

local now = now_ms()
local due = A_due == '1'
local base = flow_base()
local f = flow_load(base)
if f == nil then
  if due then return { 'outcome', 'not_found_cleaned' } end
  return fail('flow_not_found')
end
local members = redis.call('ZRANGE', K_members, 0, -1)
if #members > N(A_max) then
  if due then
    flow_refile(members, 0, true)
    return { 'outcome', 'too_large_cleaned' }
  end
  return fail('flow_too_large', S(#members), 'Flow')
end
local live = flow_unfinished(f, members)
if live ~= nil then
  if due then
    flow_refile(members, 0, true)
    return { 'outcome', 'not_terminal_cleaned' }
  end
  return fail('execution_not_terminal', live, 'Flow')
end
if due then
  local at, keep = flow_due(members)
  if keep or at > now then
    flow_refile(members, at, keep)
    if keep then at = 0 end
    return { 'outcome', 'not_yet_due', 'due_at', at }
  end
end
local out = {}
local doomed = { K_flow_core, base .. ':tags', K_members }
for i = 1, #members do
  local id = members[i]
  local e = load_exec(exec_keys_of(id))
  if e ~= nil then
    out[#out + 1] = id
    out[#out + 1] = delete_exec(e)
  end
  -- every edge leaves a member: its out map names them all
  for _, eid in ipairs(redis.call('HVALS', base .. ':out:' .. id)) do doomed[#doomed + 1] = base .. ':edge:' .. eid end
  for _, k in ipairs({ ':out:', ':in:', ':group:', ':gstate:' }) do doomed[#doomed + 1] = base .. k .. id end
end
redis.call('ZREM', ks().idx .. 'flows', A_flow)
redis.call('ZREM', ks().idx .. 'flows_done', A_flow)
for i = 1, #doomed, 64 do
  redis.call('UNLINK', unpack(doomed, i, math.min(i + 63, #doomed)))
end
return { 'outcome', 'deleted', 'members', out }
