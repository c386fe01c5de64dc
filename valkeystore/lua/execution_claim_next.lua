-- execution_claim_next: claim the best eligible execution of a lane that the
-- worker can serve, walking at most scan_limit heads; a head no live worker
-- can serve moves to blocked:route.
-- KEYS: lanes lease_expiry attempt_timeout lease_workers
-- ARGV: now lane capabilities live_capabilities scan_limit worker_id worker_instance_id lease_id attempt_id lease_ttl

local now = now_ms()
local heads = redis.call('ZRANGE', lane_key(A.lane, 'eligible'), '0', S(N(A.scan_limit) - 1))
local blocked = {}
local skipped = 0
for _, id in ipairs(heads) do
  local e = load_exec(exec_keys_of(id))
  if e == nil or check_claimable(e) ~= nil then
    skipped = skipped + 1
  elseif grant_live(e, now) and e.grant_worker_id ~= A.worker_id then
    skipped = skipped + 1
  elseif missing_caps(e.required_caps, A.capabilities) == '' then
    local r = claim(e, lease_req(), now)
    return ok({ claimed = r, blocked = blocked, skipped = skipped })
  elseif missing_caps(e.required_caps, A.live_capabilities) == '' then
    skipped = skipped + 1
  else
    e.last_cap_mismatch_at = now
    block(e, now, 'waiting_for_capable_worker',
      'no live worker has: ' .. missing_caps(e.required_caps, A.live_capabilities))
    save_exec(e)
    blocked[#blocked + 1] = id
  end
end
return ok({ blocked = blocked, skipped = skipped })
