-- lease_history: an execution's lease history after a sequence number,
-- oldest first. Entry ids are "<seq>-0", so "<after>-1" starts right after
-- the entry with sequence number after.
-- KEYS: core history
-- ARGV: after limit

if redis.call('EXISTS', K.core) == 0 then return fail('execution_not_found') end
local entries = redis.call('XRANGE', K.history, A.after .. '-1', '+', 'COUNT', A.limit)
return ok({ events = entries })
