-- flow_list: one page of the partition's flows in id order from after, a
-- ZRANGEBYLEX start ("(<id>": after that id; "": from the beginning).
-- KEYS: flows
-- ARGV: after limit

local limit = N(A_limit)
local from = '-'
if A_after ~= '' then from = A_after end
local ids = redis.call('ZRANGEBYLEX', K_flows, from, '+', 'LIMIT', '0', S(limit + 1))
local next_id = ''
if #ids > limit then
  ids[#ids] = nil
  next_id = ids[#ids]
end
return { 'ids', ids, 'next', next_id }
