-- front: the scripts' common front: the time, the script's execution, replies and errors
--
-- Part of the library put in front of the scripts: see lua/README.md.

local function now_ms()
  return N(A_now)
end

-- netstrings decodes "<len>:<bytes>" repeated into a list of strings.
local function netstrings(s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = string.find(s, ':', i, true)
    local len = tonumber(string.sub(s, i, c - 1))
    out[#out + 1] = string.sub(s, c + 1, c + len)
    i = c + len + 1
  end
  return out
end

-- enc turns a reply table into what Redis returns: a map becomes a flat
-- array of name/value pairs, a list an array, booleans 1/0; strings and
-- numbers stay (a number is an integer reply). The Go decoder reads the
-- pairs by name.
local function enc(v)
  local tv = type(v)
  if tv == 'table' then
    local out = {}
    if v[1] ~= nil or next(v) == nil then
      for i = 1, #v do out[i] = enc(v[i]) end
    else
      local n = 0
      for k, x in pairs(v) do
        out[n + 1] = k
        out[n + 2] = enc(x)
        n = n + 2
      end
    end
    return out
  end
  if tv == 'boolean' then
    if v then return 1 end
    return 0
  end
  if tv == 'string' or tv == 'number' then return v end
  error('valkeystore: cannot encode a ' .. tv)
end

local function ok(t)
  return enc(t or {})
end

local function fail(code, detail, field)
  return { 'err', code, 'detail', detail or '', 'field', field or '' }
end

-- the_exec loads the script's own execution (K_core, id A_id).
local function the_exec()
  return load_exec(exec_keys(string.sub(K_core, 1, -6)))
end
