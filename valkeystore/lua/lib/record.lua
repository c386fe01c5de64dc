-- record: loading and saving the execution record
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- A record is X:core's hot fields decoded by cjson, e[1] the numbers and
-- e[2] the strings, with the execution's keys in e.k and, once a cold field
-- was used, the cold fields in e.c (record.go).

local function blank_exec(k)
  local n, s = rec_blank()
  return { n, s, k = k, c = rec_blank_cold() }
end

local function load_exec(k)
  local r = redis.call('HMGET', k.core, 'n', 's')
  if not r[1] then return nil end
  local n = cjson.decode(r[1])
  -- e[1][1] is layout_version (record.go): upgrade a past layout, refuse
  -- an unknown one
  if n[1] ~= REC_VERSION then return rec_upgrade(n, cjson.decode(r[2]), k) end
  return { n, cjson.decode(r[2]), k = k }
end

-- rec_cold returns e's cold fields, reading them on first use.
local function rec_cold(e)
  local c = e.c
  if c == nil then
    c = cjson.decode(redis.call('HGET', e.k.core, 'c'))
    e.c = c
  end
  return c
end

local function save_exec(e)
  local n, s = string.format(REC_NUM_FMT, unpack(e[1])), cjson.encode(e[2])
  local c = e.c
  if c == nil then
    redis.call('HSET', e.k.core, 'n', n, 's', s)
  else
    redis.call('HSET', e.k.core, 'n', n, 's', s,
      'c', string.format(REC_COLD_FMT, unpack(c[1])) .. cjson.encode(c[2]) .. ']')
  end
end

-- record_pairs returns every field of the record as name/value pairs.
local function record_pairs(e)
  local out, n = {}, 0
  local c = rec_cold(e)
  local hn, hs, cn, cs = rec_names()
  for _, v in ipairs({ { hn, e[1] }, { hs, e[2] }, { cn, c[1] }, { cs, c[2] } }) do
    for i, name in ipairs(v[1]) do
      out[n + 1], out[n + 2], n = name, v[2][i], n + 2
    end
  end
  return out
end
