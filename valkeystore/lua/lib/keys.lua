-- keys: numbers as decimal text, and the keys of a partition and of an execution
--
-- Part of the library put in front of the scripts: see lua/README.md.

local function S(n)
  return string.format('%d', n)
end

local function N(s)
  if s == nil or s == '' or s == false then return 0 end
  return tonumber(s)
end

-- ks is the keyspace of the script's partition, parsed from K_lanes
-- ("<prefix>:idx:<tag>:lanes").
local ks_cache
local function ks()
  if ks_cache == nil then
    local pfx, tag = string.match(K_lanes, '^(.*):idx:(%b{}):lanes$')
    if pfx == nil then error('valkeystore: malformed lanes key') end
    ks_cache = { pfx = pfx, tag = tag, idx = pfx .. ':idx:' .. tag .. ':' }
  end
  return ks_cache
end

local function lane_key(lane, name)
  return ks().idx .. 'lane:' .. lane .. ':' .. name
end

-- route_key is the route group of namespace ns and required capabilities
-- csv; route_member names it in the lane's route_groups ("<ns>:<csv>": a
-- namespace has no ':').
local function route_key(lane, ns, csv)
  return ks().idx .. 'lane:' .. lane .. ':route:' .. ns .. ':' .. csv
end

local function route_member(ns, csv)
  return ns .. ':' .. csv
end

local function work_channel(lane)
  return ks().pfx .. ':work:' .. lane
end

local function lease_channel(wi)
  return ks().pfx .. ':lease:' .. wi
end

-- exec_keys derives the keys a record uses from the execution's base
-- "<prefix>:exec:<tag>:<id>"; its other keys are base .. ':payload',
-- ':result', ':tags' and ':meta' (keys.go's execKeys names all but the last,
-- which only scripts that load the record read).
local function exec_keys(base)
  return { base = base, core = base .. ':core', history = base .. ':lease:history' }
end

local function exec_keys_of(id)
  return exec_keys(ks().pfx .. ':exec:' .. ks().tag .. ':' .. id)
end

local function attempt_key(e, i)
  return e.k.base .. ':attempt:' .. S(i)
end
