-- quota_release_ack: remove outbox entries by execution and token
-- (netstrings, in pairs); entries already gone are ignored.
-- KEYS: outbox outbox_data
-- ARGV: items

local v = netstrings(A_items)
local acked = 0
for i = 1, #v, 2 do
  local m = v[i] .. '\t' .. v[i + 1]
  if redis.call('ZREM', K_outbox, m) == 1 then
    redis.call('HDEL', K_outbox_data, m)
    acked = acked + 1
  end
end
return { 'acked', acked }
