-- admission_blocked: the partition's budget- and quota-blocked groups in
-- (lane, reason, budget, quota, key) order (I:adm_groups' byte order), up
-- to limit, as rows (member, count); Go reads the member.
-- KEYS: lanes adm_groups
-- ARGV: limit

local limit = N(A_limit)
local ms = redis.call('ZRANGE', K_adm_groups, '0', S(limit))
local more = 0
if #ms > limit then
  more = 1
  ms[#ms] = nil
end
local rows = {}
for i, m in ipairs(ms) do
  local lane, kind, id, qkey = adm_parse_group(m)
  local g = adm_group('key', lane, kind, id, qkey)
  rows[2 * i - 1], rows[2 * i] = m, redis.call('ZCARD', g)
end
return { 'groups', rows, 'more', more }
