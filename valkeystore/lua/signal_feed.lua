-- signal_feed: one page of the partition's signal-delivery feed after an
-- exclusive seq (0: from the oldest kept), and the last seq written.
-- KEYS: feed feed_seq
-- ARGV: after limit

local from = '-'
if N(A_after) > 0 then from = '(0-' .. A_after end
local rows = {}
for _, r in ipairs(redis.call('XRANGE', K_feed, from, '+', 'COUNT', A_limit)) do
  local f, n = r[2], #rows
  rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4], rows[n + 5], rows[n + 6] =
    string.sub(r[1], 3), f[2], f[4], f[6], f[8], f[10]
end
return { 'rows', rows, 'last', redis.call('GET', K_feed_seq) or '0' }
