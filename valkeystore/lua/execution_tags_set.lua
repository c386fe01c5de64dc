-- execution_tags_set: set and remove tags of an execution in any state,
-- terminal ones included (lua-semantics ff_set_execution_tags). Go checked
-- the keys and values; a result over max_tags keys writes nothing. A
-- change that changes something stamps last_mutation_at.
-- KEYS: core tags
-- ARGV: now id set remove max_tags

local e = the_exec()
if e == nil then return fail('execution_not_found') end
local changed = tags_change(K_tags, A_set, A_remove, N(A_max_tags))
if changed == nil then return fail('invalid_input', 'too_many_tags', 'Set') end
if changed then
  e.last_mutation_at = now_ms()
  save_exec(e)
end
return { 'changed', changed and 1 or 0, 'tags', redis.call('HGETALL', K_tags) }
