-- suspended_list: one page of the partition's suspended executions in id
-- order from after, a ZRANGEBYLEX start ("(<id>", or "" from the
-- beginning), each with its suspension.
-- KEYS: lanes suspended
-- ARGV: after limit

local limit = N(A_limit)
local from = '-'
if A_after ~= '' then from = A_after end
local ids = redis.call('ZRANGEBYLEX', K_suspended, from, '+', 'LIMIT', '0', S(limit + 1))
local next_id = ''
if #ids > limit then
  ids[#ids] = nil
  next_id = ids[#ids]
end
local rows = {}
for _, id in ipairs(ids) do
  local k = exec_keys_of(id)
  local e = load_exec(k)
  local s = redis.call('HMGET', k.base .. ':susp', 'id', 'reason', 'suspended_at', 'timeout_at')
  local n = #rows
  rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4], rows[n + 5], rows[n + 6] =
    id, e.lane, s[1] or '', s[2] or '', s[3] or '0', s[4] or '0'
end
return { 'rows', rows, 'next', next_id }
