-- flow_describe: a flow's record, its tags, and its members' states
-- (phase, eligibility and outcome of each, from which Go derives the
-- public states and the flow's state).
-- KEYS: flow_core flow_tags members lanes
-- ARGV:

local core = redis.call('HGETALL', K_flow_core)
if #core == 0 then return fail('flow_not_found') end
local states = {}
local members = redis.call('ZRANGE', K_members, 0, -1)
for i = 1, #members do
  local e = load_exec(exec_keys_of(members[i]))
  if e ~= nil then
    states[#states + 1] = e.lifecycle_phase .. ' ' .. e.eligibility_state .. ' ' .. e.terminal_outcome
  end
end
return { 'core', core, 'tags', redis.call('HGETALL', K_flow_tags), 'members', states }
