-- execution_result: a completed execution's result.
-- KEYS: core result
-- ARGV:

if redis.call('EXISTS', K_core) == 0 then return fail('execution_not_found') end
local r = redis.call('GET', K_result)
if not r then return fail('result_not_found') end
return { 'result', r }
