-- feed_read: the events of a partition's feed (lib/feed.lua) whose
-- sequence is above after (decimal text; 0: from the oldest kept), oldest
-- first, at most count, as rows of seq then the entry's values in field
-- order (8 for completions, 11 for lease events; the Go side knows which),
-- and last, the sequence of the newest event ('0' for none). The newest
-- entry is never trimmed, so it is the last ever written.
-- KEYS: feed
-- ARGV: after count

local from = '-'
if A_after ~= '0' then from = '(0-' .. A_after end
local rows, n = {}, 0
for _, r in ipairs(redis.call('XRANGE', K_feed, from, '+', 'COUNT', A_count)) do
  local f = r[2]
  n = n + 1
  rows[n] = string.sub(r[1], 3)
  for i = 2, #f, 2 do
    n = n + 1
    rows[n] = f[i]
  end
end
local last = '0'
local top = redis.call('XREVRANGE', K_feed, '+', '-', 'COUNT', '1')
if top[1] then last = string.sub(top[1][1], 3) end
return { 'rows', rows, 'last', last }
