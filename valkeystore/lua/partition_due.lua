-- partition_due: when each timer index of the partition next comes due (its
-- first entry's score; "" when empty; the delayed index over every lane),
-- whether any lane has route-blocked executions, whether any execution is
-- blocked on a budget or a quota, whether the quota release outbox holds
-- anything, and how many executions the partition holds.
-- KEYS: lanes all lease_expiry attempt_timeout deadline susp_timeout wp_expiry adm_groups outbox retention
-- ARGV:

-- A partition that holds nothing answers with one command: an empty
-- sorted set does not exist, and every per-lane key is reached through
-- K_lanes. Most of a sweep's partitions are empty on a quiet system, and
-- reading each key one by one cost eleven commands per partition.
if redis.call('EXISTS', K_lanes, K_all, K_lease_expiry, K_attempt_timeout, K_deadline, K_susp_timeout,
    K_wp_expiry, K_adm_groups, K_outbox, K_retention) == 0 then
  return {
    'lease_expiry', '', 'attempt_timeout', '', 'deadline', '', 'delayed', '', 'suspension_timeout', '',
    'waitpoint_expiry', '', 'retention', '', 'route_blocked', 0, 'admission_blocked', 0,
    'quota_release_pending', 0, 'executions', 0,
  }
end

local function first(key)
  local r = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
  if #r == 0 then return '' end
  return S(N(r[2]))
end

local delayed = nil
local routed = false
for _, lane in ipairs(redis.call('ZRANGE', K_lanes, '0', '-1')) do
  local d = first(lane_key(lane, 'delayed'))
  if d ~= '' and (delayed == nil or N(d) < N(delayed)) then delayed = d end
  if not routed and redis.call('ZCARD', lane_key(lane, 'route_groups')) > 0 then routed = true end
end
return {
  'lease_expiry', first(K_lease_expiry),
  'attempt_timeout', first(K_attempt_timeout),
  'deadline', first(K_deadline),
  'delayed', delayed or '',
  'suspension_timeout', first(K_susp_timeout),
  'waitpoint_expiry', first(K_wp_expiry),
  'retention', first(K_retention),
  'route_blocked', routed and 1 or 0,
  'admission_blocked', redis.call('ZCARD', K_adm_groups) > 0 and 1 or 0,
  'quota_release_pending', redis.call('ZCARD', K_outbox) > 0 and 1 or 0,
  'executions', redis.call('ZCARD', K_all),
}
