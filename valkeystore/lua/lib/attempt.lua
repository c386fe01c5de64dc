-- attempt: attempts and the lease history
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- end_attempt closes the current attempt if it is open, and its stream
-- (stream.lua) with the status as the reason. An active execution's
-- attempt is open (started): only a claim makes an execution active, and
-- every transition out of active closes or suspends it.
local function end_attempt(e, now, status, reason, cat)
  if e.cur_attempt < 0 then return end
  local key = attempt_key(e, e.cur_attempt)
  if e.lifecycle_phase ~= 'active' then
    local st = redis.call('HGET', key, 'status')
    if st ~= 'started' and st ~= 'suspended' then return end
  end
  if e.stream_open ~= 0 then close_stream(e, now, status) end
  redis.call('HSET', key, 'status', status, 'ended_at', S(now), 'failure_reason', reason,
    'failure_category', cat)
end

-- add_history appends an event to the lease history, a LIST of entries
-- "<seq>|<epoch>|<attempt>|<at>|<kind>|<lease id>|<instance>|<reason>"
-- (the reason last: it may hold "|"), keeping the newest LEASE_HISTORY;
-- the leases feed (feed.lua) gets the event too.
local function add_history(e, now, kind, reason)
  feed_lease(e, now, kind, reason)
  e.hist_seq = e.hist_seq + 1
  local n = redis.call('RPUSH', e.k.history,
    string.format('%d|%d|%d|%d|', e.hist_seq, e.epoch, e.cur_attempt, now)
      .. kind .. '|' .. e.lease_id .. '|' .. e.lease_wi .. '|' .. reason)
  if n > LEASE_HISTORY then redis.call('LTRIM', e.k.history, S(n - LEASE_HISTORY), '-1') end
end
