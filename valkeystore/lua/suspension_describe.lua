-- suspension_describe: an execution's open suspension or, when none is
-- open, its last one (model.SuspensionDescribeParams).
-- KEYS: core lanes
-- ARGV:

local e = the_exec()
if e == nil then return fail('execution_not_found') end
local sk = e.k.base .. ':susp'
local raw = redis.call('HGETALL', sk)
if #raw == 0 then return fail('suspension_not_found') end
return { 'susp', raw, 'signals', sigs_reply(e.k.base, redis.call('LRANGE', sk .. ':sigs', '0', '-1')) }
