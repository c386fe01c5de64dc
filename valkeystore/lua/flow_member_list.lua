-- flow_member_list: one page of a flow's members in id order from after, a
-- ZRANGEBYLEX start ("(<id>": after that id; "": from the beginning)
-- (model.FlowMemberListParams; memstore's FlowMemberList is the same read).
-- KEYS: flow_core members
-- ARGV: after limit

if redis.call('EXISTS', K_flow_core) == 0 then return fail('flow_not_found') end
local ids, next_id = lex_page(K_members, A_after, N(A_limit))
return { 'ids', ids, 'next', next_id }
