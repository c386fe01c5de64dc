-- execution_create: create one execution, or report the duplicate its id or
-- idempotency key names; with a flow, create it as a held member of that
-- flow (which must be open and not sealed). With idem_states (",waiting,
-- active,"), the key's execution blocks the create only while stored and in
-- one of those public states; otherwise the key moves to the new execution.
-- KEYS: core payload tags idem lanes all deadline
-- ARGV: now id namespace lane kind payload priority tags required_caps retry_max retry_backoff retry_delay_ms retry_initial_ms retry_multiplier retry_max_delay_ms max_reclaims max_replays attempt_timeout deadline delay_until budgets quota quota_key ret_ok ret_failed ret_cancelled metadata idem_key idem_ttl idem_states gc_slack flow

local now = now_ms()

local function duplicate(id)
  local e = load_exec(exec_keys_of(id))
  if e == nil then return { 'id', id, 'duplicate', 1 } end
  return { 'id', id, 'duplicate', 1, 'state', vector(e) }
end

if A_idem_key ~= '' then
  local ent = redis.call('HMGET', K_idem, 'id', 'expires_at')
  -- a key naming a deleted execution is free again
  if ent[1] and N(ent[2]) > now then
    local old = load_exec(exec_keys_of(ent[1]))
    if old ~= nil and (A_idem_states == '' or string.find(A_idem_states, ',' .. public_state(old) .. ',', 1, true)) then
      return { 'id', ent[1], 'duplicate', 1, 'state', vector(old) }
    end
  end
end
if redis.call('EXISTS', K_core) == 1 then return duplicate(A_id) end
local fbase = nil
if A_flow ~= '' then
  fbase = flow_base_of(A_flow)
  local st = redis.call('HMGET', fbase .. ':core', 'state', 'sealed')
  if not st[1] then return fail('flow_not_found') end
  if st[1] ~= 'open' then return fail('flow_already_terminal', st[1]) end
  if st[2] == '1' then return fail('flow_sealed') end
end

local e = blank_exec(exec_keys(string.sub(K_core, 1, -6)))
new_exec(e, { A_id, A_namespace, A_lane, A_kind, A_payload, A_priority, A_tags, A_required_caps,
  A_retry_max, A_retry_backoff, A_retry_delay_ms, A_retry_initial_ms, A_retry_multiplier,
  A_retry_max_delay_ms, A_max_reclaims, A_max_replays, A_attempt_timeout, A_deadline, A_delay_until,
  A_budgets, A_quota, A_quota_key, A_ret_ok, A_ret_failed, A_ret_cancelled, A_metadata }, 1, now)
if fbase == nil then
  make_runnable(e, now, N(A_delay_until), 'waiting_for_delay', 'pending_first_attempt')
else
  -- born held (the flow kit's hold), its RunAt kept for its release
  local d = N(A_delay_until)
  if d > now then e.delay_until = d end
  set_state(e, now, 'runnable', 'unowned', 'blocked_by_dependencies', 'waiting_for_children', 'none', 'pending_first_attempt')
  redis.call('ZADD', lane_key(e.lane, runnable_index('blocked_by_dependencies')), S(now), e.id)
  flow_join(fbase, A_flow, e, now)
end
if A_idem_key ~= '' then e.idem_key = A_idem_key end
save_exec(e)

if A_idem_key ~= '' then
  local ttl = N(A_idem_ttl)
  redis.call('DEL', K_idem)
  redis.call('HSET', K_idem, 'id', e.id, 'expires_at', S(now + ttl))
  redis.call('PEXPIRE', K_idem, S(ttl + N(A_gc_slack)))
end
return { 'id', e.id, 'duplicate', 0, 'state', vector(e) }
