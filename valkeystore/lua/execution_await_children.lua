-- execution_await_children: park the caller's active execution, a member
-- of a sealed flow, until the children it creates here have all ended
-- (model.ExecutionAwaitChildrenParams; memstore/flow_await.go is the same
-- step). children holds, per child, the create fields of new_exec
-- (delay_until and the admission attachments among them) and the edge id,
-- as netstrings.
-- KEYS: core history lanes lease_expiry attempt_timeout all deadline
-- ARGV: now id lease_id epoch attempt_id children

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local f = fence_arg()
local replay, err = check_fenced_op(e, 'await', false, f, now)
if err ~= nil then return err end
local fid = redis.call('GET', e.k.base .. ':flow')
if replay then
  local gens = redis.call('HGET', flow_base_of(fid) .. ':gstate:' .. e.id, 'gens')
  return { 'flow', fid, 'generation', N(gens), 'replayed', 1 }
end
if not fid then return fail('execution_not_in_flow', e.id, 'ID') end
local base = flow_base_of(fid)
local core = redis.call('HMGET', base .. ':core', 'state', 'sealed')
if core[1] ~= 'open' then return fail('flow_already_terminal', core[1]) end
if core[2] ~= '1' then return fail('flow_not_sealed') end
local v, per = netstrings(A_children), 27
for i = 1, #v, per do
  local pre = 'Children[' .. S((i - 1) / per) .. '].'
  if redis.call('EXISTS', exec_keys_of(v[i]).core) == 1 then
    return fail('invalid_input', 'exists', pre .. 'Create.ID')
  end
  if redis.call('EXISTS', base .. ':edge:' .. v[i + 26]) == 1 then
    return fail('dependency_already_exists', v[i + 26], pre .. 'Edge')
  end
end

-- the parent: lease released, attempt paused, held
local kit = flow_kit()
if e.cur_attempt >= 0 then
  redis.call('HSET', attempt_key(e, e.cur_attempt), 'status', 'suspended')
end
remove_from_lane(e)
release_lease(e, now, 'released', 'await_children')
e.delay_until = 0
kit.hold(e, now, 'attempt_interrupted')
record_op(e, 'await', false, f)
save_exec(e)
local parent = e.id
local g = kit.gstate_load(base, parent)
if g == nil then g = { size = 0, succeeded = 0, impossible = 0, state = 'waiting', gen = 0, gens = 0 } end
g.gens = g.gens + 1
g.gen, g.size, g.succeeded, g.impossible, g.state = g.gens, #v / per, 0, 0, 'waiting'
kit.gstate_save(base, parent, g)

-- the children: members of the sealed flow with nothing to wait for
for i = 1, #v, per do
  local e = blank_exec(exec_keys_of(v[i]))
  new_exec(e, v, i, now)
  make_runnable(e, now, N(v[i + 18]), 'waiting_for_delay', 'pending_first_attempt')
  flow_join(base, fid, e, now)
  save_exec(e)
  local edge = v[i + 26]
  local rev = redis.call('HINCRBY', base .. ':core', 'graph_revision', 1)
  redis.call('HINCRBY', base .. ':core', 'edge_count', 1)
  redis.call('HSET', base .. ':edge:' .. edge, 'id', edge, 'upstream', e.id, 'downstream', parent,
    'pass_result', '0', 'state', 'pending', 'revision', S(rev), 'created_at', S(now), 'gen', S(g.gen))
  redis.call('HSET', base .. ':out:' .. e.id, parent, edge)
  redis.call('HSET', base .. ':in:' .. parent, e.id, edge)
end
return { 'flow', fid, 'generation', g.gen, 'replayed', 0 }
