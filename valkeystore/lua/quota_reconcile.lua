-- quota_reconcile: tend every bucket of the partition in (policy, key)
-- order: trim its window, forget it when it holds no entry and no
-- admission, and report its admissions admitted before stale_before as
-- rows (id, key, execution, token, admitted at). Go orders a bucket's rows
-- by execution and keeps limit; rows stop after the bucket that takes
-- them past limit, as later ones would sort after.
-- KEYS: quotas buckets
-- ARGV: now stale_before limit

local now, stale, limit = now_ms(), N(A_stale_before), N(A_limit)
local trimmed, kept, n = 0, 0, 0
local rows = {}
for _, m in ipairs(redis.call('ZRANGE', K_buckets, '0', '-1')) do
  local id, key = string.sub(m, 1, 36), string.sub(m, 38)
  local qk = quota_key_of(id)
  local p = redis.call('HMGET', qk, 'rate', 'window')
  local w, a = qk .. ':w:' .. key, qk .. ':a:' .. key
  if p[1] and N(p[1]) > 0 then
    trimmed = trimmed + redis.call('ZREMRANGEBYSCORE', w, '-inf', S(now - N(p[2])))
  end
  if not p[1] or (redis.call('EXISTS', w) == 0 and redis.call('HLEN', a) == 0) then
    redis.call('DEL', w, a, qk .. ':seq:' .. key)
    redis.call('ZREM', K_buckets, m)
  else
    kept = kept + 1
    if n <= limit then
      local all = redis.call('HGETALL', a)
      for i = 1, #all, 2 do
        local v = all[i + 1]
        local c = string.find(v, ':', 1, true)
        local at = N(string.sub(v, 1, c - 1))
        if at < stale then
          local r = #rows
          rows[r + 1], rows[r + 2], rows[r + 3], rows[r + 4], rows[r + 5] =
            id, key, all[i], string.sub(v, c + 1), S(at)
          n = n + 1
        end
      end
    end
  end
end
return { 'trimmed', trimmed, 'buckets', kept, 'stale', rows }
