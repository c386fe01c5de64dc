-- index_scan_due: read the entries of one timer index of the partition (the
-- delayed index: of every lane) that are due at now, after an exclusive
-- (due, id) cursor; at most limit+1 per index, as one flat list of
-- (id, lane, due) triples. Go merges and truncates. With a filter
-- (namespace, tag key and value; all '' for none), the ids of the entries
-- whose execution exists and does not match are listed in unmatched.
-- KEYS: lanes lease_expiry attempt_timeout deadline susp_timeout wp_expiry retention
-- ARGV: now index after_due after_id limit filter_namespace filter_tag_key filter_tag_value

local now = now_ms()
local limit = N(A_limit)
local has_cursor = A_after_id ~= ''
local after_due = N(A_after_due)

-- uuid_part drops the "{fp:N}:" of an execution id: entries order by UUID.
local function uuid_part(id)
  local i = string.find(id, '}:', 1, true)
  if i == nil then return id end
  return string.sub(id, i + 2)
end
local after_uuid = uuid_part(A_after_id)

-- first_after returns the rank of the first entry of key after the cursor.
local function first_after(key)
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. S(after_due))
  local hi = lo + redis.call('ZCOUNT', key, S(after_due), S(after_due))
  -- entries of rank [lo, hi) share the cursor's score; members ascend by bytes
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', key, S(mid), S(mid))[1]
    if bless(after_uuid, uuid_part(m)) then hi = mid else lo = mid + 1 end
  end
  return lo
end

local function scan(key, lane, out)
  local items
  if has_cursor then
    local r = first_after(key)
    items = redis.call('ZRANGE', key, S(r), S(r + limit), 'WITHSCORES')
  else
    items = redis.call('ZRANGEBYSCORE', key, '-inf', S(now), 'WITHSCORES', 'LIMIT', '0', S(limit + 1))
  end
  local n = #out
  for i = 1, #items, 2 do
    if N(items[i + 1]) > now then break end
    out[n + 1], out[n + 2], out[n + 3], n = items[i], lane, items[i + 1], n + 3
  end
  local nxt = redis.call('ZRANGEBYSCORE', key, '(' .. S(now), '+inf', 'WITHSCORES', 'LIMIT', '0', '1')
  if #nxt > 0 then return N(nxt[2]) end
  return 0
end

local items = {}
local next_due = 0
local function note(n)
  if n ~= 0 and (next_due == 0 or n < next_due) then next_due = n end
end
if A_index == 'delayed' then
  for _, lane in ipairs(redis.call('ZRANGE', K_lanes, '0', '-1')) do
    note(scan(lane_key(lane, 'delayed'), lane, items))
  end
elseif A_index == 'lease_expiry' then
  note(scan(K_lease_expiry, '', items))
elseif A_index == 'attempt_timeout' then
  note(scan(K_attempt_timeout, '', items))
elseif A_index == 'suspension_timeout' then
  note(scan(K_susp_timeout, '', items))
elseif A_index == 'pending_waitpoint_expiry' then
  note(scan(K_wp_expiry, '', items))
elseif A_index == 'retention' then
  note(scan(K_retention, '', items))
else
  note(scan(K_deadline, '', items))
end
local unmatched = {}
if A_filter_namespace ~= '' or A_filter_tag_key ~= '' then
  for i = 1, #items, 3 do
    local id = items[i]
    if not scan_filter_match(load_exec(exec_keys_of(id)), A_filter_namespace, A_filter_tag_key, A_filter_tag_value) then
      unmatched[#unmatched + 1] = id
    end
  end
end
return { 'items', items, 'next_due', next_due, 'unmatched', unmatched }
