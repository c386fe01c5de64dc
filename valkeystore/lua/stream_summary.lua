-- stream_summary: attempt's summary document (lib/stream.lua has the
-- keys); version 0 when no summary frame was appended.
-- KEYS: core
-- ARGV: attempt

local e = the_exec()
if e == nil then return fail('execution_not_found') end
local i = N(A_attempt)
if i >= e.total_attempts then return fail('attempt_not_found') end
local m = redis.call('HMGET', stream_key(e, i) .. ':meta', 'version', 'doc', 'doc_first', 'doc_at')
if N(m[1]) == 0 then return { 'version', 0 } end
return { 'version', m[1], 'doc', m[2], 'first', m[3], 'at', m[4] }
