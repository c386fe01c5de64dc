-- stream_read: the frames of attempt's stream whose sequence is above
-- after (decimal text), oldest first, at most count, best-effort ones
-- skipped when exclude_best_effort; frames are rows of seq, time, type,
-- payload, encoding, correlation id, mode, summary version, next the
-- last sequence looked at ('' for none). lib/stream.lua has the keys.
-- KEYS: core
-- ARGV: now attempt after count exclude_best_effort

local now = now_ms()
local e = the_exec()
if e == nil then return fail('execution_not_found') end
local i = N(A_attempt)
if i >= e.total_attempts then return fail('attempt_not_found') end
local key = stream_key(e, i)
local m = redis.call('HMGET', key .. ':meta', 'last_seq', 'closed', 'closed_at', 'closed_reason', 'persistent',
  'expires_at', 'fmt')
local closed, at, why = stream_closed_state(e, i, m)
local frames, nf, last = {}, 0, ''
local expires_at = N(m[6])
local fmt2 = m[7] == '2'
local last_seq = m[1] or '0'
-- a persistent server-numbered stream's durable frames skip the meta:
-- its last entry is its last sequence
if fmt2 and m[5] == '1' then
  local top = redis.call('XREVRANGE', key, '+', '-', 'COUNT', '1')
  if top[1] and N(string.sub(top[1][1], 3)) > N(last_seq) then last_seq = string.sub(top[1][1], 3) end
end
-- a never-persistent stream's frames are gone at their expiry
if m[1] and not (m[5] ~= '1' and expires_at ~= 0 and now >= expires_at) then
  -- entry ids are 0-<seq> (fmt 2: the first above after is after '(0-<after>')
  -- or <seq>-0 (<after>-1)
  local from = A_after .. '-1'
  if fmt2 then from = '(0-' .. A_after end
  local rows = redis.call('XRANGE', key, from, '+', 'COUNT', A_count)
  local skip_be = A_exclude_best_effort == '1'
  for _, r in ipairs(rows) do
    local seq, f = string.sub(r[1], 1, -3), r[2]
    if fmt2 then seq = string.sub(r[1], 3) end
    last = seq
    if not (skip_be and f[10] == 'best_effort') then
      frames[nf + 1], frames[nf + 2], frames[nf + 3], frames[nf + 4] = seq, f[12], f[2], f[4]
      frames[nf + 5], frames[nf + 6], frames[nf + 7], frames[nf + 8] = f[6], f[8], f[10], f[14]
      nf = nf + 8
    end
  end
end
return { 'frames', frames, 'next', last, 'last_seq', last_seq, 'closed', closed and 1 or 0,
  'closed_at', at, 'closed_reason', why }
