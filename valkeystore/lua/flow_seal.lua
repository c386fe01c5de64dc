-- flow_seal: close the flow's graph: fix every group's size, release the
-- held members without incoming edges, decide every group that can be
-- (flow_settle drains the skips' cascades).
-- KEYS: flow_core members lanes deadline attempt_timeout lease_expiry
-- ARGV: now flow

local base = flow_base()
local f = flow_load(base)
if f == nil then return fail('flow_not_found') end
local bad = flow_open(f)
if bad then return bad end
if f.sealed == '1' then return { 'status', 'already_sealed', 'released', 0, 'skipped', 0 } end
local now = now_ms()
local kit = flow_kit()
redis.call('HSET', K_flow_core, 'sealed', '1', 'last_mutation_at', S(now))
local members = redis.call('ZRANGE', K_members, 0, -1)
for i = 1, #members do
  local g = kit.gstate_load(base, members[i])
  if g ~= nil then
    g.size = redis.call('HLEN', base .. ':in:' .. members[i])
    kit.gstate_save(base, members[i], g)
  end
end
for i = 1, #members do
  local id = members[i]
  local g = kit.gstate_load(base, id)
  if g ~= nil then
    kit.group_decide(base, true, id, g, now)
  else
    local e = load_exec(exec_keys_of(id))
    if e ~= nil and kit.held(e) then
      kit.release_held(e, now)
      save_exec(e)
    end
  end
  flow_settle(now)
end
flow_live(base, A_flow, 0) -- a flow whose members have all ended is finished
flow_finished_refile(base) -- ... and due when its members are (lib/retention.lua)
return { 'status', 'sealed', 'released', kit.tally.released, 'skipped', kit.tally.skipped }
