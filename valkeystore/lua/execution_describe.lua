-- execution_describe: everything about one execution: the record's fields
-- by name, the tags, the flow it is a member of ("" for none) and the
-- metadata.
-- KEYS: core tags exec_flow
-- ARGV:

local e = the_exec()
if e == nil then return fail('execution_not_found') end
return { 'core', record_pairs(e), 'tags', redis.call('HGETALL', K_tags),
  'flow', redis.call('GET', K_exec_flow) or '', 'meta', redis.call('HGETALL', e.k.base .. ':meta') }
