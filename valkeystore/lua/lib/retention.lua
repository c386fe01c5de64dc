-- retention: deleting terminal executions and finished flows, and the
-- retention entries a flow's members stand for (model.RetentionStore,
-- model.FlowDeleter; memstore/retention_ops.go is the Go half)
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- lane_release drops lane from I:lanes once the partition holds no
-- execution of it: no counter of I:counts names it, its indexes are empty
-- and none of its blocked groups is listed. The scanners walk I:lanes, so
-- a lane whose executions are all deleted stops costing their passes
-- anything; the next create lists it again. A record of a layout before v6
-- is not counted: its first save lists its lane again (save_exec).
local function lane_release(lane)
  local idx = ks().idx
  local mid = '|' .. lane .. '|'
  for _, f in ipairs(redis.call('HKEYS', idx .. 'counts')) do
    -- "<ns>|<lane>|<state>|<kind>": neither the namespace nor the lane holds '|'
    local a = string.find(f, '|', 1, true)
    if a ~= nil and string.sub(f, a, a + #mid - 1) == mid then return end
  end
  for _, name in ipairs({ 'eligible', 'delayed', 'terminal', 'suspended', 'route_groups' }) do
    if redis.call('ZCARD', lane_key(lane, name)) > 0 then return end
  end
  for _, name in ipairs(BLOCKED_NAMES) do
    if redis.call('ZCARD', lane_key(lane, name)) > 0 then return end
  end
  -- I:adm_groups lists a lane's groups lane first: "<lane>\t..."
  if #redis.call('ZRANGEBYLEX', idx .. 'adm_groups', '[' .. lane .. '\t', '[' .. lane .. '\t\255', 'LIMIT', '0', '1') > 0 then
    return
  end
  redis.call('ZREM', idx .. 'lanes', lane)
end

-- delete_exec deletes terminal e with everything it owns: its record,
-- payload, result, tags, attempts, lease history, streams, suspension,
-- signals, waitpoints, idempotency key (while it still names e), flow
-- field and every index entry. It returns e's budgets (their ledgers
-- live on the budget partitions: the caller forgets them).
local function delete_exec(e)
  local base, idx = e.k.base, ks().idx
  if e.idem_key ~= '' then
    local ik = ks().pfx .. ':idem:' .. ks().tag .. ':' .. e.ns .. ':' .. e.idem_key
    if redis.call('HGET', ik, 'id') == e.id then redis.call('DEL', ik) end
  end
  local last = e[3] and count_add(e, e[3], -1)
  remove_from_lane(e)
  for _, name in ipairs({ 'all_executions', 'execution_deadline', 'attempt_timeout', 'lease_expiry', 'retention',
    'suspended', 'suspension_timeout', 'pending_waitpoint_expiry' }) do
    redis.call('ZREM', idx .. name, e.id)
  end
  local doomed = { e.k.core, base .. ':payload', base .. ':result', base .. ':tags', base .. ':meta', e.k.history, base .. ':wps',
    base .. ':susp', base .. ':susp:sigs', base .. ':sig', base .. ':sigpay', base .. ':sigseq', base .. ':flow' }
  for i = 0, e.total_attempts - 1 do
    local sk = base .. ':stream:' .. S(i)
    doomed[#doomed + 1] = base .. ':attempt:' .. S(i)
    doomed[#doomed + 1] = sk
    doomed[#doomed + 1] = sk .. ':meta'
  end
  for _, wp in ipairs(redis.call('ZRANGE', base .. ':wps', '0', '-1')) do
    local wk = ks().pfx .. ':wp:' .. ks().tag .. ':' .. wp
    doomed[#doomed + 1] = wk
    doomed[#doomed + 1] = wk .. ':sigs'
    doomed[#doomed + 1] = wk .. ':dedup'
  end
  -- UNLINK frees large values (long streams) off the script's thread
  for i = 1, #doomed, 64 do
    redis.call('UNLINK', unpack(doomed, i, math.min(i + 63, #doomed)))
  end
  -- the last execution of its counter may be the lane's last
  if last then lane_release(e.lane) end
  return e.budgets
end

-- flow_unfinished names what keeps flow f (base its keys' base, members
-- its member ids) from being deleted: 'open' when it is neither sealed
-- nor cancelled, else its first member that is not terminal (nil: f is
-- finished).
local function flow_unfinished(f, members)
  if f.sealed ~= '1' and f.state ~= 'cancelled' then return 'open' end
  for i = 1, #members do
    local e = load_exec(exec_keys_of(members[i]))
    if e ~= nil and e.lifecycle_phase ~= 'terminal' then return members[i] end
  end
  return nil
end

-- flow_due is when a finished flow's retention runs out: the latest of
-- its members' terminal times plus their retentions (keep true: one is
-- kept for good, and so is the flow).
local function flow_due(members)
  local at, keep = 0, false
  for i = 1, #members do
    local e = load_exec(exec_keys_of(members[i]))
    if e ~= nil then
      local to, d = e.terminal_outcome, e.ret_ok
      if to == 'failed' or to == 'expired' then
        d = e.ret_failed
      elseif to ~= 'success' then
        d = e.ret_cancelled
      end
      if d == 0 then keep = true end
      if e.terminal_at + d > at then at = e.terminal_at + d end
    end
  end
  return at, keep
end

-- flow_refile replaces the members' retention entries by one on the
-- first, due at at (none when keep).
local function flow_refile(members, at, keep)
  if #members == 0 then return end
  local k = ks().idx .. 'retention'
  chunked('ZREM', k, members)
  if not keep then redis.call('ZADD', k, S(at), members[1]) end
end

-- flow_finished_refile files finished flow f's one retention entry
-- (FlowSeal and FlowCancel, which can finish a flow without a member
-- ending); base is its keys' base.
local function flow_finished_refile(base)
  local f = flow_load(base)
  local members = redis.call('ZRANGE', base .. ':members', 0, -1)
  if flow_unfinished(f, members) == nil then
    local at, keep = flow_due(members)
    flow_refile(members, at, keep)
  end
end
