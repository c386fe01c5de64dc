-- execution_describe: everything about one execution.
-- KEYS: core tags
-- ARGV:

local core = redis.call('HGETALL', K.core)
if #core == 0 then return fail('execution_not_found') end
return ok({ core = core, tags = redis.call('HGETALL', K.tags) })
