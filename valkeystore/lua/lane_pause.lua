-- lane_pause: pause a lane on this partition (the flag lane:<L>:paused,
-- whose value is the pause's "<at ms>|<reason>"). On the lane's home
-- partition (home = 1) the first pause wins: a flag already there stays
-- and is returned (already = 1). On the other partitions the home's value
-- is copied (state), so every partition holds the same.
-- KEYS: lanes
-- ARGV: lane state home

local key = lane_key(A_lane, 'paused')
if A_home == '1' then
  local cur = redis.call('GET', key)
  if cur then return { 'already', 1, 'state', cur } end
end
redis.call('SET', key, A_state)
return { 'already', 0, 'state', A_state }
