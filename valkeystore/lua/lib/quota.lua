-- quota: quota policies and their buckets on their quota partition
-- (model.AdmissionStore; keys.go has the keys)
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- A policy Q = P:quota:<tag>:<id> is a HASH (rate, window, jitter,
-- concurrency, created_at). Its bucket <key> is Q:w:<key> (ZSET, the rate
-- window: score the admission time, member a number from Q:seq:<key>;
-- written only with a rate), Q:seq:<key> (STRING) and Q:a:<key> (HASH
-- execution → "<admitted at ms>:<token>", the admissions held). The
-- partition's I:quota_buckets lists its buckets as "<id>:<key>" (an id is
-- 36 bytes, so byte order is id then key order): a bucket is listed from
-- its first admission until a reconcile finds it empty.

-- qks is the keyspace of the script's quota partition, parsed from
-- K_buckets ("<prefix>:idx:<tag>:quota_buckets").
local qks_cache
local function qks()
  if qks_cache == nil then
    local pfx, tag = string.match(K_buckets, '^(.*):idx:(%b{}):quota_buckets$')
    if pfx == nil then error('valkeystore: malformed quota buckets key') end
    qks_cache = { pfx = pfx, tag = tag }
  end
  return qks_cache
end

local function quota_key_of(id)
  return qks().pfx .. ':quota:' .. qks().tag .. ':' .. id
end

-- quota_in_window counts the window entries of w after now − window (0
-- without a rate).
local function quota_in_window(w, rate, window, now)
  if rate == 0 then return 0 end
  return redis.call('ZCOUNT', w, '(' .. S(now - window), '+inf')
end

-- quota_retry_after is when the oldest entry of w after now − window
-- leaves the window (0 when none).
local function quota_retry_after(w, window, now)
  local r = redis.call('ZRANGEBYSCORE', w, '(' .. S(now - window), '+inf', 'WITHSCORES', 'LIMIT', '0', '1')
  if #r == 0 then return 0 end
  local x = N(r[2]) + window - now
  if x < 0 then x = 0 end
  return x
end
