-- Streams and their consumer groups: layout, reads and removals.
--
-- Streams (SPEC §10). A stream is `s:<name>` (a hash: `c` its settings as
-- created, `em`, `bm`, `ag` (age limit in ms, '' for none), `wf` ('r'
-- refuses when full, 't' trims the oldest), `l` its lease ('' for none),
-- `n` the offset the next append gets, `b` the payload bytes held, `rv`
-- its reservation), its entries' payloads `sp:<name>` and append times
-- `st:<name>` (two lists in step), and its consumers' committed offsets
-- `sc:<name>`. Offsets are dense: the entries held are n - #sp .. n - 1.
-- STREAMS indexes the tenant's streams (score +inf: they have no
-- deadline); `ls:<lease>` the streams attached to a lease.
--
-- Consumer groups (contract/group.rs): `sg:<name>` maps each group of
-- stream `name` to its settings ("<pending_max>/<deliveries_max>/<start>",
-- as src/redis/groups.rs writes them) and `sgn:<name>` to the offset its
-- next read starts at. A group's pending list is three keys (`group_key`):
-- `gp` maps an entry to "<deliveries>/<last delivery, ms>/<dead 0|1>/
-- <member>", `go` holds every entry (score: its offset) and `gi` the live
-- ones (score: their last delivery). An entry is its offset zero-padded
-- (`group_member`), so members of equal score sort by offset.

-- The key `part` ('gp', 'go', 'gi') of group `group` of stream `name`
-- (the stream's name is length-prefixed, so no two pairs share a key).
local function group_key(part, name, group)
  return K .. part .. ':' .. #name .. ':' .. name .. ':' .. group
end

local function group_member(offset)
  return string.format('%020.0f', offset)
end

-- The keys of group `group` of stream `name`: its entries, its entries by
-- offset and its live entries by last delivery.
local function group_keys(name, group)
  return group_key('gp', name, group), group_key('go', name, group), group_key('gi', name, group)
end

-- Entry `m` of the group pending list `gp`: its deliveries, last delivery
-- (ms), dead flag (0 or 1) and member.
local function pending_entry(gp, m)
  local d, at, dead, who = string.match(call('HGET', gp, m), '^(%d+)/(%d+)/(%d)/(.*)$')
  return tonumber(d), tonumber(at), tonumber(dead), who
end

-- An entry of a group's pending list as `gp` holds it.
local function pending_record(deliveries, at, dead, member)
  return num(deliveries) .. '/' .. num(at) .. '/' .. dead .. '/' .. member
end

-- Deletes group `group` of stream `name`; false if there was none.
local function drop_group(name, group)
  if call('HDEL', K .. 'sg:' .. name, group) == 0 then
    return false
  end
  call('HDEL', K .. 'sgn:' .. name, group)
  call('DEL', group_keys(name, group))
  return true
end

-- The stream `name` if visible (it exists and its lease, if any, is
-- live): its fields {em, bm, ag, wf, l, n, b}, or nil.
local function visible_stream(name)
  local s = call('HMGET', K .. 's:' .. name, 'em', 'bm', 'ag', 'wf', 'l', 'n', 'b')
  if not s[1] or (s[5] ~= '' and lease_state(s[5]) ~= OK) then
    return nil
  end
  return s
end

-- Stream `name` (as `visible_stream` reads it) and the settings of its
-- group `group`, or nil if either is missing.
local function visible_group(name, group)
  local s = visible_stream(name)
  if not s then
    return nil
  end
  local settings = call('HGET', K .. 'sg:' .. name, group)
  if not settings then
    return nil
  end
  return s, settings
end

-- How many of the `len` oldest entries of stream `name` are past its age
-- limit `ag` ('' for none) now (append times rise, so a binary search).
local function aged(name, ag, len)
  if ag == '' or len == 0 then
    return 0
  end
  local cut = NOW - tonumber(ag)
  local times = K .. 'st:' .. name
  local lo, hi = 0, len
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if tonumber(call('LINDEX', times, mid)) <= cut then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo
end

-- Drops the `k` oldest entries of stream `name`; returns their payload
-- bytes (the caller updates `b`).
local function pop_entries(name, k)
  if k <= 0 then
    return 0
  end
  local bytes = 0
  for _, payload in ipairs(call('LPOP', K .. 'sp:' .. name, k)) do
    bytes = bytes + #payload
  end
  call('LTRIM', K .. 'st:' .. name, k, -1)
  return bytes
end

-- Drops the entries of stream `name` (`s`, its record from
-- `visible_stream`) that are past the stream's age now; returns the
-- entries it holds then and their payload bytes. Every function that
-- reports or changes the entries held starts here, so none counts an
-- entry no read returns (a read skips them without writing).
local function drop_aged(name, s)
  local len = call('LLEN', K .. 'sp:' .. name)
  local b = tonumber(s[7])
  local old = aged(name, s[3], len)
  if old > 0 then
    b = b - pop_entries(name, old)
    len = len - old
    call('HSET', K .. 's:' .. name, 'b', num(b))
  end
  return len, b
end

-- Removes stream `name` with its entries and consumers, announced with
-- `cause` (nil: quietly, as burial removes what a revoked tenant's leases
-- held).
local function drop_stream(name, cause)
  local sk = K .. 's:' .. name
  unlink(sk, 'ls:', name)
  if cause then
    leave_index(STREAMS, name, E_STREAMS, cause)
  elseif call('ZREM', STREAMS, name) == 1 then
    give_back(sk)
  end
  for _, group in ipairs(call('HKEYS', K .. 'sg:' .. name)) do
    drop_group(name, group)
  end
  call('DEL', sk, K .. 'sp:' .. name, K .. 'st:' .. name, K .. 'sc:' .. name)
end
