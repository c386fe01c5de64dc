-- flow_list: one page of the partition's flows in id order from after, a
-- ZRANGEBYLEX start ("(<id>": after that id; "": from the beginning).
-- KEYS: flows
-- ARGV: after limit

local ids, next_id = lex_page(K_flows, A_after, N(A_limit))
return { 'ids', ids, 'next', next_id }
