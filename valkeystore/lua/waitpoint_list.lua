-- waitpoint_list: every waitpoint an execution keeps, by creation time
-- then id (model.WaitpointListParams), each with its signals.
-- KEYS: core lanes
-- ARGV:

local e = the_exec()
if e == nil then return fail('execution_not_found') end
local out = {}
for _, wp in ipairs(redis.call('ZRANGE', e.k.base .. ':wps', '0', '-1')) do
  local wk = wp_key(wp)
  out[#out + 1] = redis.call('HGETALL', wk)
  out[#out + 1] = sigs_reply(e.k.base, redis.call('LRANGE', wk .. ':sigs', '0', '-1'))
end
return { 'waitpoints', out }
