-- index_repair: the repairing index reconciler (model.IndexRepairer).
-- Walks the partition's all_executions in id order from after (a
-- ZRANGEBYLEX start, as execution_list.lua), limit executions, and for
-- each one the filter matches (namespace, tag key and value; all '' for
-- none; a member without a record matches) compares the indexes that hold
-- it (every lane's and the partition's, those execution_indexes.lua reads)
-- with expected_indexes (lib/index.lua) of
-- its record: an entry it lacks is filed (the eligible index through
-- add_eligible, which tells the lane's workers), one it should not have
-- dropped, one with the wrong score rescored. A member without a record
-- belongs nowhere. A blocked execution missing from its route or
-- admission group is filed in it (group_gap). With dry = '1' nothing is written. The repairs are
-- flat (id, index, action, score, old score) quintuples; Go orders them.
-- KEYS: lanes all lease_expiry attempt_timeout deadline suspended susp_timeout wp_expiry retention
-- ARGV: after limit dry filter_namespace filter_tag_key filter_tag_value

local limit = N(A_limit)
local dry = A_dry == '1'
local from = '-'
if A_after ~= '' then from = A_after end
local ids = redis.call('ZRANGEBYLEX', K_all, from, '+', 'LIMIT', '0', S(limit + 1))
local next_id = ''
if #ids > limit then
  ids[#ids] = nil
  next_id = ids[#ids]
end

local slots = {}
local lane_names = { 'eligible', 'delayed', 'terminal', 'suspended' }
for _, name in ipairs(BLOCKED_NAMES) do lane_names[#lane_names + 1] = name end
for _, lane in ipairs(redis.call('ZRANGE', K_lanes, '0', '-1')) do
  for _, name in ipairs(lane_names) do
    local full = 'lane:' .. lane .. ':' .. name
    slots[#slots + 1] = { full, lane_key(lane, name), name == 'eligible' }
  end
end
slots[#slots + 1] = { 'lease_expiry', K_lease_expiry }
slots[#slots + 1] = { 'attempt_timeout', K_attempt_timeout }
slots[#slots + 1] = { 'execution_deadline', K_deadline }
slots[#slots + 1] = { 'suspended', K_suspended }
slots[#slots + 1] = { 'suspension_timeout', K_susp_timeout }
slots[#slots + 1] = { 'pending_waitpoint_expiry', K_wp_expiry }
slots[#slots + 1] = { 'retention', K_retention }
slots[#slots + 1] = { 'all_executions', K_all }

-- score reads a ZSCORE reply; the fallback is for miniredis (tests only),
-- which prints a round score as "-3e+11", text its Lua's tonumber refuses.
local function score(s)
  local n = tonumber(s)
  if n ~= nil then return n end
  local m, x = string.match(s, '^(%-?[%d.]+)e%+?(%-?%d+)$')
  return tonumber(m) * 10 ^ tonumber(x)
end

-- group_gap is the blocked group e's record puts it in when it is not a
-- member: its name (model.RouteGroupIndex, the key's suffix) and a
-- function that files e as block (lib/claim.lua) does, at score at.
-- A stray member is left to the unblock scripts, which drop it.
local function group_gap(e)
  if e.lifecycle_phase ~= 'runnable' then return nil end
  local es, key, name, join = e.eligibility_state, nil, nil, nil
  local prefix = 'lane:' .. e.lane .. ':'
  if es == 'blocked_by_route' then
    local csv = e.required_caps
    key, name = route_key(e.lane, e.ns, csv), prefix .. 'route:' .. e.ns .. ':' .. csv
    join = function(at)
      redis.call('ZADD', key, S(at), e.id)
      redis.call('ZADD', lane_key(e.lane, 'route_groups'), '0', route_member(e.ns, csv))
    end
  elseif es == 'blocked_by_budget' and e.blocked_budget ~= '' then
    key, name = adm_group('key', e.lane, 'b', e.blocked_budget, '', e.id), prefix .. 'adm:b:' .. e.blocked_budget
    join = function(at) adm_group('join', e.lane, 'b', e.blocked_budget, '', e.id, at) end
  elseif es == 'blocked_by_quota' and e.quota ~= '' then
    key = adm_group('key', e.lane, 'q', e.quota, e.quota_key, e.id)
    name = prefix .. 'adm:q:' .. e.quota .. ':' .. e.quota_key
    join = function(at) adm_group('join', e.lane, 'q', e.quota, e.quota_key, e.id, at) end
  else
    return nil
  end
  if redis.call('ZSCORE', key, e.id) ~= false then return nil end
  return name, join
end

local out = {}
local function note(id, name, action, score, old)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = id, name, action, S(score), S(old)
end
for _, id in ipairs(ids) do
  local e = load_exec(exec_keys_of(id))
  if scan_filter_match(e, A_filter_namespace, A_filter_tag_key, A_filter_tag_value) then
    local want = {}
    if e ~= nil then want = expected_indexes(e) end
    -- a flow member's retention entry stands for its flow (flow_delete.lua
    -- moves and drops it): the flow's to keep, not the record's
    local in_flow = e ~= nil and redis.call('EXISTS', e.k.base .. ':flow') == 1
    for _, sl in ipairs(slots) do
      if not (in_flow and sl[1] == 'retention') then
        local got = redis.call('ZSCORE', sl[2], id)
        local w = want[sl[1]]
        if got ~= false and w == nil then
          note(id, sl[1], 'removed', 0, score(got))
          if not dry then redis.call('ZREM', sl[2], id) end
        elseif got == false and w ~= nil then
          note(id, sl[1], 'added', w[1], 0)
          if not dry then
            if sl[3] then add_eligible(e) else redis.call('ZADD', sl[2], S(w[1]), id) end
          end
        elseif got ~= false and w[2] and score(got) ~= w[1] then
          note(id, sl[1], 'rescored', w[1], score(got))
          if not dry then
            if sl[3] then add_eligible(e) else redis.call('ZADD', sl[2], S(w[1]), id) end
          end
        end
      end
    end
    if e ~= nil then
      local name, join = group_gap(e)
      if name ~= nil then
        note(id, name, 'added', e.last_transition_at, 0)
        if not dry then join(e.last_transition_at) end
      end
    end
  end
end
return { 'repairs', out, 'next', next_id, 'examined', #ids }
