-- index_tamper: a test hook (model.IndexTamperer), never run by the
-- engine: damage one index entry of execution id whatever its record
-- says. lane '' names a partition index by name (as ExecutionIndexes
-- does), else the lane's index name, refused when the partition has no
-- such lane. action 'removed' drops the entry; 'added' and 'rescored'
-- file it with score (0 for all_executions and suspended). A blocked
-- group's name (route:<ns>:<csv>, adm:b:<b>, adm:q:<q>:<key>) takes only
-- 'removed' (model.IndexTamperParams.Validate), which leaves the group
-- listed.
-- KEYS: lanes all lease_expiry attempt_timeout deadline suspended susp_timeout wp_expiry retention
-- ARGV: id lane name action score

local key
if A_lane ~= '' then
  if redis.call('ZSCORE', K_lanes, A_lane) == false then return fail('invalid_input', 'unknown_lane', 'Index') end
  key = lane_key(A_lane, A_name)
else
  key = ({ all_executions = K_all, lease_expiry = K_lease_expiry, attempt_timeout = K_attempt_timeout,
    execution_deadline = K_deadline, suspended = K_suspended, suspension_timeout = K_susp_timeout,
    pending_waitpoint_expiry = K_wp_expiry, retention = K_retention })[A_name]
  if key == nil then return fail('invalid_input', 'not_tamperable', 'Index') end
end
if A_action == 'removed' then
  redis.call('ZREM', key, A_id)
else
  local score = A_score
  if A_lane == '' and (A_name == 'all_executions' or A_name == 'suspended') then score = '0' end
  redis.call('ZADD', key, score, A_id)
end
return ok()
