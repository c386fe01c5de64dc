-- lane_state: a lane's pause flag on this partition ("<at ms>|<reason>",
-- paused = 0 when absent).
-- KEYS: lanes
-- ARGV: lane

local cur = redis.call('GET', lane_key(A_lane, 'paused'))
if not cur then return { 'paused', 0 } end
return { 'paused', 1, 'state', cur }
