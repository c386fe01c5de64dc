-- lane_resume: resume a lane on this partition (drop its flag
-- lane:<L>:paused). On the lane's home partition (home = 1, the last one
-- resumed) it also publishes '*' on the lane's work channel: every idle
-- worker of the lane looks for work (model.PartitionAll).
-- KEYS: lanes
-- ARGV: lane home

local was = redis.call('DEL', lane_key(A_lane, 'paused'))
if A_home == '1' then redis.call('PUBLISH', work_channel(A_lane), '*') end
return { 'was', was }
