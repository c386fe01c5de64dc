-- flow: flows, their members, dependency edges and edge groups
--
-- Part of the library put in front of the scripts: see lua/README.md.
-- The keys (valkeystore/keys.go): F = <prefix>:flow:<tag>:<flow>, with
-- F:core, F:tags, F:members, F:edge:<edge>, F:out:<up> (downstream → edge),
-- F:in:<down> (upstream → edge), F:group:<down> (policy), F:gstate:<down>
-- (size, succeeded, impossible, state, and gen and gens once the member
-- awaited children); a member's flow in X:flow; the
-- partition's flows in I:flows. memstore/flow.go is the Go half.

-- flow_base is the script's flow, from K_flow_core ("F:core").
local function flow_base()
  return string.sub(K_flow_core, 1, -6)
end

-- flow_base_of is the base of flow fid in the script's partition.
local function flow_base_of(fid)
  return ks().pfx .. ':flow:' .. ks().tag .. ':' .. fid
end

-- flow_live adds d to the live members of flow fid (base its keys' base)
-- and files it as live (I:flows) or finished (I:flows_done): finished once
-- no member is live and it is sealed or cancelled (model.FlowListParams).
-- sorted_pairs sorts a flat HGETALL reply (key, value, ...) by key, so
-- decisions cascade in one order on every store (memstore's downstreams).
local function sorted_pairs(flat)
  local keys, val = {}, {}
  for j = 1, #flat, 2 do
    keys[#keys + 1] = flat[j]
    val[flat[j]] = flat[j + 1]
  end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    out[#out + 1] = k
    out[#out + 1] = val[k]
  end
  return out
end

local function flow_live(base, fid, d)
  local live = redis.call('HINCRBY', base .. ':core', 'live', S(d))
  if live == 0 then
    local c = redis.call('HMGET', base .. ':core', 'sealed', 'state')
    if c[1] == '1' or c[2] == 'cancelled' then
      redis.call('ZREM', ks().idx .. 'flows', fid)
      redis.call('ZADD', ks().idx .. 'flows_done', '0', fid)
      return
    end
  end
  if d > 0 and redis.call('ZREM', ks().idx .. 'flows_done', fid) == 1 then
    redis.call('ZADD', ks().idx .. 'flows', '0', fid)
  end
end

-- flow_join records e as a member of flow fid (base its keys' base; e's
-- hold is the caller's, and so is saving e, whose fl it sets) and
-- returns the flow's member count and graph revision.
local function flow_join(base, fid, e, now)
  redis.call('ZADD', base .. ':members', '0', e.id)
  redis.call('SET', e.k.base .. ':flow', fid)
  e.fl = 1
  local count = redis.call('HINCRBY', base .. ':core', 'member_count', 1)
  local rev = redis.call('HINCRBY', base .. ':core', 'graph_revision', 1)
  redis.call('HSET', base .. ':core', 'last_mutation_at', S(now))
  flow_live(base, fid, 1)
  return count, rev
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

-- flow_ended_state is the state of a sealed open flow whose members have
-- all ended (completed, or failed when one did not complete), or 'open'
-- (model.DeriveFlowState; the operations check the stored state, and a
-- sealed flow takes nothing anyway).
local function flow_ended_state(base)
  local members = redis.call('ZRANGE', base .. ':members', 0, -1)
  local failed = false
  for i = 1, #members do
    local e = load_exec(exec_keys_of(members[i]))
    if e ~= nil then
      if e.lifecycle_phase ~= 'terminal' then return 'open' end
      if e.terminal_outcome ~= 'success' then failed = true end
    end
  end
  if failed then return 'failed' end
  return 'completed'
end

-- flow_unsealed refuses a sealed flow (an error reply, or nil).
local function flow_unsealed(f)
  if f.sealed == '1' then return fail('flow_sealed') end
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

-- downstream_started refuses an edge into a member that is not held (e
-- nil: the member's record is gone).
local function downstream_started(e)
  local detail = 'missing'
  if e ~= nil then
    detail = e.lifecycle_phase
    if detail == 'runnable' then detail = e.eligibility_state end
  end
  return fail('downstream_not_held', detail, 'Downstream')
end

-- Dependency resolution: the contract is model.FlowStore's; memstore/flow.go
-- has the same steps under the same names. A member ending resolves its
-- pending outgoing edges and decides the groups it completes; a skip ends
-- a member and so cascades. terminate lists what it ended (ended) and
-- flow_settle drains that list, so a long chain needs no deep stack; each
-- step's effects commute, so the hash order it walks in does not change
-- the result. A record is always held in a variable named e (see
-- README.md); downstreams are loaded, changed and saved one at a time.

-- flow_kit builds the resolution helpers, once per script and only when a
-- script meets a flow: every definition a script includes costs a closure
-- per call (README.md), and the scripts of the hot path include these
-- through flow_settle, so they live in one function body instead of a
-- dozen top-level definitions.
local flow_kit_cache
local function flow_kit()
  if flow_kit_cache then return flow_kit_cache end
  -- tally counts what one step released and skipped (FlowSeal reports
  -- it).
  local tally = { released = 0, skipped = 0 }

  -- held reports whether e is held for its dependencies.
  local function held(e)
    return e.lifecycle_phase == 'runnable' and e.eligibility_state == 'blocked_by_dependencies'
  end

  -- hold parks a runnable member until its dependencies resolve, its RunAt
  -- (delay_until) kept for its release.
  local function hold(e, now, as)
    remove_from_lane(e)
    set_state(e, now, 'runnable', 'unowned', 'blocked_by_dependencies', 'waiting_for_children', 'none', as)
    clear_grant(e)
    redis.call('ZADD', lane_key(e.lane, runnable_index('blocked_by_dependencies')), S(now), e.id)
  end

  -- release_held lets a held member run: eligible now, or delayed until its
  -- RunAt.
  local function release_held(e, now)
    remove_from_lane(e)
    make_runnable(e, now, e.delay_until, 'waiting_for_delay', e.attempt_state)
    tally.released = tally.released + 1
  end

  -- gstate_load reads F:gstate:<down> (nil when down has no incoming
  -- edge): gen is the generation whose edges count (0: the edges staged
  -- while the flow was built; n: down's nth await of children), gens the
  -- awaits so far.
  local function gstate_load(base, down)
    local raw = redis.call('HMGET', base .. ':gstate:' .. down, 'size', 'succeeded', 'impossible', 'state', 'gen', 'gens')
    if not raw[4] then return nil end
    return { size = N(raw[1]), succeeded = N(raw[2]), impossible = N(raw[3]), state = raw[4],
      gen = N(raw[5]), gens = N(raw[6]) }
  end

  local function gstate_save(base, down, g)
    local key = base .. ':gstate:' .. down
    redis.call('HSET', key, 'size', S(g.size), 'succeeded', S(g.succeeded),
      'impossible', S(g.impossible), 'state', g.state)
    if g.gens > 0 then redis.call('HSET', key, 'gen', S(g.gen), 'gens', S(g.gens)) end
  end

  -- group_need is how many successes down's group of size n and
  -- generation gen needs (model.EdgeGroupPolicy.Need; an await's
  -- generation needs every child), and whether it cancels the remaining
  -- upstreams when it decides.
  local function group_need(base, down, n, gen)
    if gen > 0 then return n, false end
    local p = redis.call('HMGET', base .. ':group:' .. down, 'kind', 'quorum', 'on_satisfied')
    local cancel = p[3] == 'cancel_remaining'
    if p[1] == 'any_of' then return 1, cancel end
    if p[1] == 'quorum' then return N(p[2]), cancel end
    return n, false
  end

  -- cancel_siblings cancels down's upstreams that have not ended (the
  -- group, of generation gen, decided st with SiblingsCancelRemaining),
  -- telling their holders; a child of an earlier await is not a sibling.
  local function cancel_siblings(base, down, gen, st, now)
    local reason = 'sibling_quorum_satisfied'
    if st == 'impossible' then reason = 'sibling_quorum_impossible' end
    local ups = sorted_pairs(redis.call('HGETALL', base .. ':in:' .. down))
    for i = 1, #ups, 2 do
      local e = load_exec(exec_keys_of(ups[i]))
      if e ~= nil and e.lifecycle_phase ~= 'terminal'
        and N(redis.call('HGET', base .. ':edge:' .. ups[i + 1], 'gen')) == gen then
        cancel_exec(e, now, reason, 'flow', true)
        save_exec(e)
      end
    end
  end

  -- group_decide decides down's group (g, its gstate) in a sealed flow once
  -- its edges allow it, releasing or skipping down when it is held (a
  -- terminal down is left waiting: its replay re-opens the group). It saves
  -- g when it decides.
  local function group_decide(base, sealed, down, g, now)
    if not sealed or g == nil or g.state ~= 'waiting' then return end
    local e = load_exec(exec_keys_of(down))
    if e == nil or e.lifecycle_phase == 'terminal' then return end
    local need, cancel = group_need(base, down, g.size, g.gen)
    local st
    if g.succeeded >= need then
      st = 'satisfied'
    elseif g.impossible > g.size - need then
      st = 'impossible'
    else
      return
    end
    g.state = st
    gstate_save(base, down, g)
    if held(e) then
      if st == 'satisfied' then
        release_held(e, now)
      else
        -- an attempt it had open (paused by a worker's delay before it
        -- joined) ends cancelled
        remove_from_lane(e)
        end_attempt(e, now, 'ended_cancelled', 'dependency_impossible', '')
        tally.skipped = tally.skipped + 1
        terminate(e, now, 'skipped')
      end
      save_exec(e)
    end
    if cancel then cancel_siblings(base, down, g.gen, st, now) end
  end

  -- edge_resolve resolves the pending edge edge (its id) into down from its
  -- ended upstream, whose outcome is to and base its keys' base: success
  -- satisfies it (and passes the result on when asked, while the downstream
  -- still waits), and so does any end of a child an await created;
  -- anything else makes it impossible. Only an edge of the group's current
  -- generation counts. g is down's gstate, updated (the caller saves it).
  local function edge_resolve(fbase, edge, down, g, to, ubase)
    local ekey = fbase .. ':edge:' .. edge
    local ed = redis.call('HMGET', ekey, 'gen', 'pass_result')
    local gen = N(ed[1])
    local counts = gen == g.gen
    if to == 'success' or gen > 0 then
      redis.call('HSET', ekey, 'state', 'satisfied')
      if not counts then return end
      g.succeeded = g.succeeded + 1
      if g.state == 'waiting' and ed[2] == '1' then
        local r = redis.call('GET', ubase .. ':result')
        local e = load_exec(exec_keys_of(down))
        if r and e ~= nil and e.lifecycle_phase ~= 'terminal' then
          redis.call('SET', e.k.base .. ':payload', r)
        end
      end
      return
    end
    redis.call('HSET', ekey, 'state', 'impossible')
    if counts then g.impossible = g.impossible + 1 end
  end

  -- flow_settle resolves the edges of every flow member terminate ended in
  -- this script (ended), cascading through skips; a script that can end an
  -- execution calls it once its records are saved.
  local function settle(now)
    local i = 1
    while i <= #ended do
      local e = ended[i]
      local fid = redis.call('GET', e.k.base .. ':flow')
      if fid then
        local fbase = flow_base_of(fid)
        flow_live(fbase, fid, -1)
        local sealed = redis.call('HGET', fbase .. ':core', 'sealed') == '1'
        local to, ubase = e.terminal_outcome, e.k.base
        local outs = sorted_pairs(redis.call('HGETALL', fbase .. ':out:' .. e.id))
        for j = 1, #outs, 2 do
          local down, edge = outs[j], outs[j + 1]
          if redis.call('HGET', fbase .. ':edge:' .. edge, 'state') == 'pending' then
            local g = gstate_load(fbase, down)
            edge_resolve(fbase, edge, down, g, to, ubase)
            gstate_save(fbase, down, g)
            group_decide(fbase, sealed, down, g, now)
          end
        end
      end
      i = i + 1
    end
    ended = {}
  end

  -- replayed re-opens what the replayed member e decided (see
  -- model.FlowStore): its resolved edges into waiting groups return to
  -- pending, and when it has incoming edges (or its flow is not sealed) it
  -- is held again with its group reset and decided again. It reports
  -- whether it took care of e's runnable state (and saved e); if not, the
  -- caller makes e eligible.
  local function replayed(e, now, as)
    local fid = redis.call('GET', e.k.base .. ':flow')
    if not fid then return false end
    local fbase = flow_base_of(fid)
    flow_live(fbase, fid, 1)
    local core = redis.call('HMGET', fbase .. ':core', 'sealed', 'state')
    -- a cancelled flow decides nothing more
    if core[2] ~= 'open' then return false end
    local sealed = core[1] == '1'
    local outs = sorted_pairs(redis.call('HGETALL', fbase .. ':out:' .. e.id))
    for j = 1, #outs, 2 do
      local down, ekey = outs[j], fbase .. ':edge:' .. outs[j + 1]
      local ed = redis.call('HMGET', ekey, 'state', 'gen')
      local st = ed[1]
      local g = gstate_load(fbase, down)
      if st ~= 'pending' and g.state == 'waiting' and N(ed[2]) == g.gen then
        if st == 'satisfied' then g.succeeded = g.succeeded - 1 else g.impossible = g.impossible - 1 end
        redis.call('HSET', ekey, 'state', 'pending')
        gstate_save(fbase, down, g)
      end
    end
    -- the group returns to the edges staged while the flow was built; an
    -- await's edges stay as they are and no longer count
    local ins = redis.call('HGETALL', fbase .. ':in:' .. e.id)
    local built = {}
    for j = 1, #ins, 2 do
      if N(redis.call('HGET', fbase .. ':edge:' .. ins[j + 1], 'gen')) == 0 then
        built[#built + 1] = ins[j]
        built[#built + 1] = ins[j + 1]
      end
    end
    local g = gstate_load(fbase, e.id)
    if g ~= nil and g.gen ~= 0 then
      g.gen, g.size, g.succeeded, g.impossible, g.state = 0, #built / 2, 0, 0, 'satisfied'
      gstate_save(fbase, e.id, g)
    end
    if sealed and #built == 0 then return false end
    hold(e, now, as)
    save_exec(e)
    if g ~= nil then
      g.succeeded, g.impossible, g.state = 0, 0, 'waiting'
      local me = e.id
      for j = 1, #built, 2 do
        local ekey = fbase .. ':edge:' .. built[j + 1]
        local e = load_exec(exec_keys_of(built[j]))
        if e ~= nil and e.lifecycle_phase == 'terminal' and e.terminal_outcome == 'success' then
          redis.call('HSET', ekey, 'state', 'satisfied')
          g.succeeded = g.succeeded + 1
        else
          redis.call('HSET', ekey, 'state', 'pending')
        end
      end
      gstate_save(fbase, me, g)
      group_decide(fbase, sealed, me, g, now)
    end
    return true
  end

  flow_kit_cache = {
    tally = tally, held = held, hold = hold, release_held = release_held,
    gstate_load = gstate_load, gstate_save = gstate_save, group_decide = group_decide,
    edge_resolve = edge_resolve, settle = settle, replayed = replayed,
  }
  return flow_kit_cache
end

-- flow_settle resolves the edges of every flow member terminate ended in
-- this script (ended), cascading through skips; a script that can end an
-- execution calls it once its records are saved. An execution created
-- outside a flow (fl 0, record.go) costs one comparison: no read, no
-- helper built; one that may be in a flow costs a GET of X:flow.
local function flow_settle(now)
  for i = 1, #ended do
    local e = ended[i]
    if e.fl ~= 0 and redis.call('GET', e.k.base .. ':flow') then
      flow_kit().settle(now)
      return
    end
  end
  ended = {}
end
