-- stream_append: append a frame to the stream of the attempt the caller's
-- lease holds (lib/stream.lua has the keys). max_len is the frames kept
-- after a durable or summary frame, ttl a best-effort frame's (ms; 0
-- otherwise), base_version and doc a summary frame's.
-- KEYS: core
-- ARGV: now id lease_id epoch attempt_id mode type payload encoding correlation max_len ttl base_version doc gc_slack

local now = now_ms()
local base = string.sub(K_core, 1, -6)
-- the caller's fence against the record's copy (stream_fence): a match
-- holds the open stream's lease, and the record is not loaded; any other
-- case takes the full checks below, the one place an append fails
local sf = redis.call('HGET', K_core, 'sf')
local cur, e, m
if sf then
  local i, x, rest = string.match(sf, '^(%d+)|(%d+)|(.*)$')
  if i ~= nil and N(x) > now and rest == A_lease_id .. '|' .. A_epoch .. '|' .. A_attempt_id then cur = N(i) end
end
if cur == nil then
  e = the_exec()
  if e == nil then return fail('execution_not_found') end
  cur = e.cur_attempt
  -- the meta's fields; read once, here when the caller's attempt's stream
  -- may be closed (it is not open), else after the lease check
  if e.stream_open ~= cur + 1 and cur >= 0 and e.cur_attempt_id == A_attempt_id then
    m = redis.call('HMGET', base .. ':stream:' .. S(cur) .. ':meta', 'last_seq', 'closed', 'closed_at',
      'closed_reason', 'persistent', 'expires_at', 'be_rate', 'be_at', 'version', 'doc_first', 'len')
    if stream_closed_state(e, cur, m) then return fail('stream_closed') end
  end
  local err = validate_lease(e, fence_arg(), now)
  if err ~= nil then return err end
end
local key = base .. ':stream:' .. S(cur)
local meta = key .. ':meta'
if m == nil then
  m = redis.call('HMGET', meta, 'last_seq', 'closed', 'closed_at', 'closed_reason', 'persistent',
    'expires_at', 'be_rate', 'be_at', 'version', 'doc_first', 'len')
end
local persistent, expires_at = m[5] == '1', N(m[6])
local version = N(m[9])
local mode = A_mode
if mode == 'summary' and A_base_version ~= S(version) then return fail('summary_version_conflict') end

-- frames of a never-persistent stream past their expiry are gone
if not persistent and expires_at ~= 0 and now >= expires_at then
  redis.call('DEL', key)
  expires_at = 0
end
-- the frames have a server TTL (best-effort frames set it)
local has_ttl = expires_at ~= 0
local seq = N(m[1]) + 1
local limit = N(A_max_len)
local sv = 0
local set = { 'last_seq', S(seq) }
if mode == 'best_effort' then
  local ttl = N(A_ttl)
  local rate = best_effort_rate(N(m[7]), N(m[8]), now, ttl)
  limit = best_effort_len(rate, ttl)
  set[3], set[4], set[5], set[6] = 'be_rate', S(rate), 'be_at', S(now)
  if not persistent then expires_at = now + 2 * ttl end
else
  set[3], set[4] = 'persistent', '1'
  expires_at = 0
  if mode == 'summary' then
    version = version + 1
    sv = version
    set[5], set[6], set[7], set[8], set[9], set[10] = 'version', S(version), 'doc', A_doc, 'doc_at', S(now)
    if N(m[10]) == 0 then set[11], set[12] = 'doc_first', S(now) end
  end
end
local ns = #set
set[ns + 1], set[ns + 2] = 'expires_at', S(expires_at)

redis.call('XADD', key, 'MAXLEN', '=', S(limit), S(seq) .. '-0', 't', A_type, 'p', A_payload,
  'e', A_encoding, 'c', A_correlation, 'm', mode, 'ts', S(now), 'v', S(sv))
if mode ~= 'best_effort' then
  if has_ttl then redis.call('PERSIST', key) end
elseif not persistent then
  -- the logical expiry (expires_at) is what reads obey; the server's only
  -- collects the frames of an abandoned stream
  redis.call('PEXPIRE', key, S(2 * N(A_ttl) + N(A_gc_slack)))
end
-- the frames kept: a persistent stream's key has no server TTL and only
-- this script changes it, so its count (len) is exact and the exact trim
-- keeps min(len + 1, limit); any other stream is counted
local n
if persistent and m[11] then
  n = N(m[11]) + 1
  if n > limit then n = limit end
else
  n = redis.call('XLEN', key)
end
set[ns + 3], set[ns + 4] = 'len', S(n)
redis.call('HSET', meta, unpack(set))
-- the record marks its stream open and keeps the fence copy (a record
-- saved before the copy existed gets it here)
if e ~= nil then
  e.stream_open = cur + 1
  if sf ~= stream_fence(e) then save_exec(e) end
end
-- the notice carries the frame when it is small (model.StreamFrameNotifier):
-- "<id>|<attempt>" then "\n<seq>|<ms>|<mode>|<version>|<#type>|<#encoding>|
-- <#correlation>|" and type .. encoding .. correlation .. payload
local note = A_id .. '|' .. S(cur)
if #A_payload <= NOTICE_FRAME_MAX then
  note = note .. '\n' .. S(seq) .. '|' .. S(now) .. '|' .. mode .. '|' .. S(sv) .. '|' .. S(#A_type) .. '|' ..
    S(#A_encoding) .. '|' .. S(#A_correlation) .. '|' .. A_type .. A_encoding .. A_correlation .. A_payload
end
local pfx, tag = string.match(base, '^(.*):exec:(%b{}):')
redis.call('PUBLISH', pfx .. ':stream:' .. tag, note)
return { 'seq', seq, 'frames', n, 'version', sv }
