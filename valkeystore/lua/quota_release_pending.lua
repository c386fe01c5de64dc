-- quota_release_pending: up to limit entries of the partition's quota
-- release outbox, oldest first, then by execution and token (the ZSET's
-- order), as rows (execution, token, quota, key, at).
-- KEYS: outbox outbox_data
-- ARGV: limit

local limit = N(A_limit)
local r = redis.call('ZRANGE', K_outbox, '0', S(limit), 'WITHSCORES')
local more = 0
if #r > 2 * limit then
  more = 1
  r[#r], r[#r - 1] = nil, nil
end
local rows = {}
for i = 1, #r, 2 do
  local m = r[i]
  local t = string.find(m, '\t', 1, true)
  local d = redis.call('HGET', K_outbox_data, m) or '\t'
  local u = string.find(d, '\t', 1, true)
  local n = #rows
  rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4], rows[n + 5] =
    string.sub(m, 1, t - 1), string.sub(m, t + 1), string.sub(d, 1, u - 1), string.sub(d, u + 1), S(N(r[i + 1]))
end
return { 'items', rows, 'more', more }
