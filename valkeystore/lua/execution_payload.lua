-- execution_payload: an execution's payload.
-- KEYS: core payload
-- ARGV:

if redis.call('EXISTS', K_core) == 0 then return fail('execution_not_found') end
return { 'payload', redis.call('GET', K_payload) or '' }
