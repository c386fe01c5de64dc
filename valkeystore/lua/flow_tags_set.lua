-- flow_tags_set: set and remove tags of a flow in any state (lua-semantics
-- ff_set_flow_tags), as execution_tags_set does for an execution.
-- KEYS: flow_core flow_tags
-- ARGV: now set remove max_tags

if redis.call('EXISTS', K_flow_core) == 0 then return fail('flow_not_found') end
local changed = tags_change(K_flow_tags, A_set, A_remove, N(A_max_tags))
if changed == nil then return fail('invalid_input', 'too_many_tags', 'Set') end
if changed then redis.call('HSET', K_flow_core, 'last_mutation_at', S(now_ms())) end
return { 'changed', changed and 1 or 0, 'tags', redis.call('HGETALL', K_flow_tags) }
