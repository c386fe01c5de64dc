-- flow_describe: a flow's record and tags.
-- KEYS: flow_core flow_tags
-- ARGV:

local core = redis.call('HGETALL', K_flow_core)
if #core == 0 then return fail('flow_not_found') end
return { 'core', core, 'tags', redis.call('HGETALL', K_flow_tags) }
