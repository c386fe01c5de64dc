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
local fc = redis.call('HMGET', K_core, 'sf', 'sp')
local sf = fc[1]
local cur, e, m
if sf then
  local i, x, rest = string.match(sf, '^(%d+)|(%d+)|(.*)$')
  if i ~= nil and N(x) > now and rest == A_lease_id .. '|' .. A_epoch .. '|' .. A_attempt_id then cur = N(i) end
end
-- the notice carries the frame when it is small (model.StreamFrameNotifier):
-- "<id>|<attempt>" then "\n<seq>|<ms>|<mode>|<version>|<#type>|<#encoding>|
-- <#correlation>|" and type .. encoding .. correlation .. payload
local function notify(seq, sv)
  local note = A_id .. '|' .. S(cur)
  if #A_payload <= NOTICE_FRAME_MAX then
    note = note .. '\n' .. S(seq) .. '|' .. S(now) .. '|' .. A_mode .. '|' .. S(sv) .. '|' .. S(#A_type) .. '|' ..
      S(#A_encoding) .. '|' .. S(#A_correlation) .. '|' .. A_type .. A_encoding .. A_correlation .. A_payload
  end
  local pfx, tag = string.match(base, '^(.*):exec:(%b{}):')
  redis.call('PUBLISH', pfx .. ':stream:' .. tag, note)
end
-- a durable frame on the open stream, persistent and numbered by the
-- server (sp: its attempt), needs neither the record nor the meta: the
-- server numbers the entry after the stream's last (0-*); NOMKSTREAM
-- leaves a stream whose key is gone to the full path
if cur ~= nil and A_mode == 'durable' and fc[2] == S(cur) then
  local key = base .. ':stream:' .. S(cur)
  local id = redis.call('XADD', key, 'NOMKSTREAM', 'MAXLEN', '=', A_max_len, '0-*', 't', A_type, 'p', A_payload,
    'e', A_encoding, 'c', A_correlation, 'm', 'durable', 'ts', S(now), 'v', '0')
  if id then
    local seq = N(string.sub(id, 3))
    local n = redis.call('XLEN', key)
    notify(seq, 0)
    return { 'seq', seq, 'frames', n, 'version', 0 }
  end
end
if cur == nil then
  e = the_exec()
  if e == nil then return fail('execution_not_found') end
  cur = e.cur_attempt
  -- the meta's fields; read once, here when the caller's attempt's stream
  -- may be closed (it is not open), else after the lease check
  if e.stream_open ~= cur + 1 and cur >= 0 and e.cur_attempt_id == A_attempt_id then
    m = redis.call('HMGET', base .. ':stream:' .. S(cur) .. ':meta', 'last_seq', 'closed', 'closed_at',
      'closed_reason', 'persistent', 'expires_at', 'be_rate', 'be_at', 'version', 'doc_first', 'len', 'fmt')
    if stream_closed_state(e, cur, m) then return fail('stream_closed') end
  end
  local err = validate_lease(e, fence_arg(), now)
  if err ~= nil then return err end
end
local key = base .. ':stream:' .. S(cur)
local meta = key .. ':meta'
if m == nil then
  m = redis.call('HMGET', meta, 'last_seq', 'closed', 'closed_at', 'closed_reason', 'persistent',
    'expires_at', 'be_rate', 'be_at', 'version', 'doc_first', 'len', 'fmt')
end
local persistent, expires_at = m[5] == '1', N(m[6])
local version = N(m[9])
local mode = A_mode
if mode == 'summary' and A_base_version ~= S(version) then return fail('summary_version_conflict') end

-- the entry ids: a stream created since ids are the server's (fmt 2)
-- has entries 0-<seq>, numbered by the server once the stream is
-- persistent (its key never expires then, so the server's last id is the
-- stream's last sequence, and the fast path above appends without the
-- meta); an older stream keeps <seq>-0, numbered from the meta
local fmt2 = m[12] == '2' or not m[1]
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
local set = {}
if mode == 'best_effort' then
  local ttl = N(A_ttl)
  local rate = best_effort_rate(N(m[7]), N(m[8]), now, ttl)
  limit = best_effort_len(rate, ttl)
  set[1], set[2], set[3], set[4] = 'be_rate', S(rate), 'be_at', S(now)
  if not persistent then expires_at = now + 2 * ttl end
else
  set[1], set[2] = 'persistent', '1'
  expires_at = 0
  if mode == 'summary' then
    version = version + 1
    sv = version
    set[3], set[4], set[5], set[6], set[7], set[8] = 'version', S(version), 'doc', A_doc, 'doc_at', S(now)
    if N(m[10]) == 0 then set[9], set[10] = 'doc_first', S(now) end
  end
end
local ns = #set
set[ns + 1], set[ns + 2] = 'expires_at', S(expires_at)

local fields = { 't', A_type, 'p', A_payload, 'e', A_encoding, 'c', A_correlation, 'm', mode, 'ts', S(now), 'v', S(sv) }
local id
if fmt2 and persistent then
  id = redis.call('XADD', key, 'NOMKSTREAM', 'MAXLEN', '=', S(limit), '0-*', unpack(fields))
  if id then seq = N(string.sub(id, 3)) end
end
if not id then
  -- not persistent, or an older stream, or a persistent stream's key
  -- gone (only deleting the execution deletes it): numbered from the meta
  local text = S(seq) .. '-0'
  if fmt2 then text = '0-' .. S(seq) end
  redis.call('XADD', key, 'MAXLEN', '=', S(limit), text, unpack(fields))
end
if mode ~= 'best_effort' then
  if has_ttl then redis.call('PERSIST', key) end
elseif not persistent then
  -- the logical expiry (expires_at) is what reads obey; the server's only
  -- collects the frames of an abandoned stream
  redis.call('PEXPIRE', key, S(2 * N(A_ttl) + N(A_gc_slack)))
end
-- the frames kept: an older stream's persistent key has no server TTL
-- and only this script changes it, so its count (len) is exact and the
-- exact trim keeps min(len + 1, limit); any other stream is counted
local n
if not fmt2 and persistent and m[11] then
  n = N(m[11]) + 1
  if n > limit then n = limit end
else
  n = redis.call('XLEN', key)
end
set[ns + 3], set[ns + 4], set[ns + 5], set[ns + 6] = 'len', S(n), 'last_seq', S(seq)
if not m[1] then set[ns + 7], set[ns + 8] = 'fmt', '2' end
redis.call('HSET', meta, unpack(set))
-- the record marks its stream open and keeps the fence copy (a record
-- saved before the copy existed gets it here); a server-numbered stream
-- that is persistent now lets the fast path take its durable frames
if e ~= nil then
  e.stream_open = cur + 1
  if sf ~= stream_fence(e) then save_exec(e) end
end
if fmt2 and mode ~= 'best_effort' and fc[2] ~= S(cur) then redis.call('HSET', K_core, 'sp', S(cur)) end
notify(seq, sv)
return { 'seq', seq, 'frames', n, 'version', sv }
