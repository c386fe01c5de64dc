-- attempt_list: every attempt of an execution in index order.
-- KEYS: core
-- ARGV:

local e = the_exec()
if e == nil then return fail('execution_not_found') end
local attempts = {}
for i = 0, e.total_attempts - 1 do
  local a = redis.call('HGETALL', attempt_key(e, i))
  a[#a + 1] = 'index'
  a[#a + 1] = S(i)
  attempts[#attempts + 1] = a
end
return { 'attempts', attempts }
