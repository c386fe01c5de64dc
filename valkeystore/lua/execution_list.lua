-- execution_list: one page of the partition's executions in id order from
-- after, a ZRANGEBYLEX start ("(<id>": after that id; "": from the
-- beginning): limit examined, those the filter matches listed (every one
-- without a filter), and the last examined as next when more remain.
-- The filter (all '' for none): namespace, tag key and value, lane, kind,
-- and public states as a CSV.
-- KEYS: lanes all
-- ARGV: after limit filter_namespace filter_tag_key filter_tag_value filter_lane filter_kind filter_states

local ids, next_id = lex_page(K_all, A_after, N(A_limit))
if A_filter_namespace == '' and A_filter_tag_key == '' and A_filter_lane == '' and A_filter_kind == ''
    and A_filter_states == '' then
  return { 'ids', ids, 'next', next_id, 'examined', #ids }
end
local states = nil
if A_filter_states ~= '' then
  states = {}
  for s in string.gmatch(A_filter_states, '[^,]+') do states[s] = true end
end
local out = {}
for _, id in ipairs(ids) do
  local e = load_exec(exec_keys_of(id))
  if e ~= nil and (A_filter_lane == '' or e.lane == A_filter_lane) and (A_filter_kind == '' or e.kind == A_filter_kind)
      and (states == nil or states[public_state(e)]) and scan_filter_match(e, A_filter_namespace, A_filter_tag_key, A_filter_tag_value) then
    out[#out + 1] = id
  end
end
return { 'ids', out, 'next', next_id, 'examined', #ids }
