-- lease_history: an execution's lease history after a sequence number,
-- oldest first, at most limit entries. The history LIST holds the entries
-- with sequence numbers hist_seq - LLEN + 1 .. hist_seq in order (see
-- lib.lua's add_history).
-- KEYS: core history
-- ARGV: after limit

local e = the_exec()
if e == nil then return fail('execution_not_found') end
local first = e.hist_seq - redis.call('LLEN', K_history) + 1
local from = N(A_after) + 1
if from < first then from = first end
local start = from - first
return { 'events', redis.call('LRANGE', K_history, S(start), S(start + N(A_limit) - 1)) }
