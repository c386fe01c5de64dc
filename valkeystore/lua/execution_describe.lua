-- execution_describe: everything about one execution: the record's fields
-- by name, and the tags.
-- KEYS: core tags
-- ARGV:

local e = the_exec()
if e == nil then return fail('execution_not_found') end
return { 'core', record_pairs(e), 'tags', redis.call('HGETALL', K_tags) }
