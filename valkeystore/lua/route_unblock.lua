-- route_unblock: return to the eligible index up to limit route-blocked
-- executions of namespace in the partition whose required capabilities are
-- within the live set (all = 1: whatever they require). It walks the
-- distinct required-capability groups of the namespace in each lane (a
-- lexical range of route_groups), never the executions that stay blocked
-- nor other namespaces' groups. A filter (namespace, tag key and value;
-- all '' for none) keeps the executions it does not match blocked.
-- KEYS: lanes
-- ARGV: now namespace live all limit filter_namespace filter_tag_key filter_tag_value

local now = now_ms()
local filtered = A_filter_namespace ~= '' or A_filter_tag_key ~= ''
local limit = N(A_limit)
local unblocked = {}
local more = false
for _, lane in ipairs(redis.call('ZRANGE', K_lanes, '0', '-1')) do
  local groups_key = lane_key(lane, 'route_groups')
  local prefix = A_namespace .. ':'
  for _, member in ipairs(redis.call('ZRANGEBYLEX', groups_key, '[' .. prefix, '(' .. A_namespace .. ';')) do
    local csv = string.sub(member, #prefix + 1)
    if A_all == '1' or missing_caps(csv, A_live) == '' then
      local g = route_key(lane, A_namespace, csv)
      local room = limit - #unblocked
      local ids
      if not filtered then
        ids = redis.call('ZRANGE', g, '0', S(room))
        if #ids > room then
          more = true
          ids[#ids] = nil
        end
      else
        -- an execution the filter does not match stays blocked and does
        -- not count towards limit
        ids = {}
        local from, done = 0, false
        while not done do
          local page = room - #ids + 1
          local batch = redis.call('ZRANGE', g, S(from), S(from + page - 1))
          from = from + #batch
          for _, x in ipairs(batch) do
            if #ids >= room then
              more, done = true, true
              break
            end
            local e = load_exec(exec_keys_of(x))
            if e == nil or scan_filter_match(e, A_filter_namespace, A_filter_tag_key, A_filter_tag_value) then
              ids[#ids + 1] = x
            end
          end
          if #batch < page then done = true end
        end
      end
      for _, id in ipairs(ids) do
        local e = load_exec(exec_keys_of(id))
        if e == nil or e.lifecycle_phase ~= 'runnable' or e.eligibility_state ~= 'blocked_by_route'
          or e.blocking_reason ~= 'waiting_for_capable_worker' then
          redis.call('ZREM', g, id)
          redis.call('ZREM', lane_key(lane, 'blocked:route'), id)
        else
          unblock(e, now)
          save_exec(e)
          unblocked[#unblocked + 1] = id
        end
      end
      if redis.call('ZCARD', g) == 0 then redis.call('ZREM', groups_key, member) end
      if more then return { 'unblocked', unblocked, 'more', 1 } end
    end
  end
end
return { 'unblocked', unblocked, 'more', 0 }
