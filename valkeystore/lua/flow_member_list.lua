-- flow_member_list: one page of a flow's members in id order from after, a
-- ZRANGEBYLEX start ("(<id>": after that id; "": from the beginning)
-- (model.FlowMemberListParams; memstore's FlowMemberList is the same read).
-- KEYS: flow_core members
-- ARGV: after limit

if redis.call('EXISTS', K_flow_core) == 0 then return fail('flow_not_found') end
local limit = N(A_limit)
local from = '-'
if A_after ~= '' then from = A_after end
local ids = redis.call('ZRANGEBYLEX', K_members, from, '+', 'LIMIT', '0', S(limit + 1))
local next_id = ''
if #ids > limit then
  ids[#ids] = nil
  next_id = ids[#ids]
end
return { 'ids', ids, 'next', next_id }
