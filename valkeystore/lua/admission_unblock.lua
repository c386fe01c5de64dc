-- admission_unblock: return to the eligible index the executions blocked
-- on the budgets (a CSV of ids, in the given order) and then the buckets
-- (netstrings: id, key, max; max 0 is no bound, and bounds the bucket over
-- all lanes) named, each budget's or bucket's lanes in name order, each
-- group oldest block first (then id), up to limit in all; each is still
-- blocked for that reason (an entry that is not leaves its group) and
-- matches the filter (one that does not stays blocked). As memstore, a
-- group is read before it is written, and the step stops (more) when an
-- entry is left once limit executions are unblocked.
-- KEYS: lanes adm_by
-- ARGV: now budgets quotas filter_namespace filter_tag_key filter_tag_value limit

local now, limit = now_ms(), N(A_limit)
local unblocked = {}

-- group unblocks what it may of one group; left is the bucket's remaining
-- bound (-1: none; nil for a budget). It returns left and whether limit
-- stopped the step.
local function group(lane, kind, id, qkey, left)
  local g = adm_group('key', lane, kind, id, qkey)
  local es, reason = 'blocked_by_budget', 'waiting_for_budget'
  if kind == 'q' then es, reason = 'blocked_by_quota', 'waiting_for_quota' end
  local picked, stale = {}, {}
  local stopped, done, from = false, false, 0
  while not done do
    local page = limit - #unblocked - #picked + 1
    local batch = redis.call('ZRANGE', g, S(from), S(from + page - 1))
    from = from + #batch
    for _, x in ipairs(batch) do
      if left == 0 then
        done = true
        break
      end
      if #unblocked + #picked >= limit then
        stopped, done = true, true
        break
      end
      local e = load_exec(exec_keys_of(x))
      local still = e ~= nil and e.lifecycle_phase == 'runnable' and e.eligibility_state == es
        and e.blocking_reason == reason
      if still then
        if kind == 'b' then
          still = e.blocked_budget == id
        else
          still = e.quota == id and e.quota_key == qkey
        end
      end
      if not still then
        stale[#stale + 1] = { x, e }
      elseif scan_filter_match(e, A_filter_namespace, A_filter_tag_key, A_filter_tag_value) then
        picked[#picked + 1] = e
        if left ~= nil and left > 0 then left = left - 1 end
      end
    end
    if #batch < page then done = true end
  end
  for _, s in ipairs(stale) do
    local x, e = s[1], s[2]
    redis.call('ZREM', g, x)
    if e == nil or e.lifecycle_phase ~= 'runnable' or e.eligibility_state ~= es then
      redis.call('ZREM', lane_key(lane, blocked_index(es)), x)
    end
  end
  for _, e in ipairs(picked) do
    unblock(e, now)
    save_exec(e)
    unblocked[#unblocked + 1] = e.id
  end
  adm_group('drop', lane, kind, id, qkey)
  return left, stopped
end

-- lanes lists the lanes of I:adm_by's range for prefix ("b\t<id>\t" or
-- "q\t<id>\t<key>\t"), in name order.
local function lanes(prefix)
  local out = {}
  local hi = string.sub(prefix, 1, -2) .. '\n'
  for _, m in ipairs(redis.call('ZRANGEBYLEX', K_adm_by, '[' .. prefix, '(' .. hi)) do
    out[#out + 1] = string.sub(m, #prefix + 1)
  end
  return out
end

for b in string.gmatch(A_budgets, '[^,]+') do
  for _, lane in ipairs(lanes('b\t' .. b .. '\t')) do
    local _, stopped = group(lane, 'b', b, '', nil)
    if stopped then return { 'unblocked', unblocked, 'more', 1 } end
  end
end
local q = netstrings(A_quotas)
for i = 1, #q, 3 do
  local id, key = q[i], q[i + 1]
  local left = N(q[i + 2])
  if left == 0 then left = -1 end
  for _, lane in ipairs(lanes('q\t' .. id .. '\t' .. key .. '\t')) do
    if left == 0 then break end
    local stopped
    left, stopped = group(lane, 'q', id, key, left)
    if stopped then return { 'unblocked', unblocked, 'more', 1 } end
  end
end
return { 'unblocked', unblocked, 'more', 0 }
