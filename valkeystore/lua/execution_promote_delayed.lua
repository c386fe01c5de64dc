-- execution_promote_delayed: make a delayed execution eligible once its time
-- has come (or at once, forced); drop stale delayed-index entries of the
-- given lane.
-- KEYS: core lanes
-- ARGV: now id lane force

local now = now_ms()
local function status(s) return { 'status', s } end
local function clean() redis.call('ZREM', lane_key(A_lane, 'delayed'), A_id) end
local e = the_exec()
if e == nil then
  clean()
  return status('not_found_cleaned')
end
if e.lifecycle_phase ~= 'runnable' then
  clean()
  return status('not_runnable_cleaned')
end
if e.eligibility_state ~= 'not_eligible_until_time' then
  clean()
  return status('not_delayed_cleaned')
end
if e.delay_until > now and A_force ~= '1' then return status('not_yet_due') end
remove_from_lane(e)
e.delay_until = 0
set_state(e, now, 'runnable', 'unowned', 'eligible_now', 'waiting_for_worker', 'none', e.attempt_state)
add_eligible(e)
save_exec(e)
return status('promoted')
