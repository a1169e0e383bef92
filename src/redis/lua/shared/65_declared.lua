-- Records of the kinds a relay declared (ADR 0080). A kind is its letter
-- here (src/redis/codes.rs: upper case, passed by the engine); a record
-- is named within its tenant by its kind, its lease and its name, its id
-- "<kind>:<lease>:<name>". Its keys:
--
--   <R>d:<id>               the record: attributes `a`, version `v`,
--                           deadline `d`, counted under its kind's ceiling
--                           until `z`, its reservation `rv`
--   <R>lr<kind>:<lease>     the lease's records of the kind: name -> the
--                           record's first version (creation order), and
--                           the per-lease cap's count
--   <R>rd<kind>             the tenant's records of the kind by deadline,
--                           which counts the kind's tenant quota
--   <R>rk                   the kinds the epoch has made records of, which
--                           the cascade and the reaping walk
--
-- The helpers are fields of one table, DECLARED: a Lua chunk holds at
-- most 200 locals, and the library is one chunk.
local DECLARED = {}

-- A record's id: its events' and its deadline index's name for it.
function DECLARED.id(kind, lease, name)
  return kind .. ':' .. lease .. ':' .. name
end

function DECLARED.key(kind, lease, name)
  return R .. 'd:' .. DECLARED.id(kind, lease, name)
end

function DECLARED.index(kind)
  return R .. 'rd' .. kind
end

function DECLARED.children(kind, lease)
  return R .. 'lr' .. kind .. ':' .. lease
end

-- Removes a record, announced with `cause`.
function DECLARED.drop(kind, lease, name, cause)
  local id = DECLARED.id(kind, lease, name)
  leave_index(DECLARED.index(kind), id, E_RECORDS, cause)
  call('ZREM', DECLARED.children(kind, lease), name)
  call('DEL', R .. 'd:' .. id)
end

-- The record if visible (live, and its lease live): {attrs, version,
-- deadline, until it counts under the ceiling}; else nil and why:
-- NOT_FOUND, or EXPIRED for a record past its deadline under a live
-- lease. `live`: a lease the caller has just found live.
function DECLARED.visible(kind, lease, name, live)
  local r = call('HMGET', DECLARED.key(kind, lease, name), 'a', 'v', 'd', 'z')
  if not r[1] then
    return nil, NOT_FOUND
  end
  if lease ~= live and lease_state(lease) ~= OK then
    return nil, NOT_FOUND
  end
  if tonumber(r[3]) <= NOW then
    return nil, EXPIRED
  end
  return r
end

-- Renews the visible record `r` (as `DECLARED.visible` read it) for
-- `ttl` ms (an absolute reset), its key outliving the deadline by `keep`
-- ms; `attrs`, if not nil, replace its attributes. Returns the reply:
-- {OK, version, remaining}, or ROOM when the engine must move the
-- record's room out first (a cluster).
function DECLARED.refresh(kind, lease, name, r, ttl, keep, attrs)
  local key = DECLARED.key(kind, lease, name)
  local d = NOW + ttl
  local z = cover(r[4], d, 3 * ttl, function()
    return {key}
  end)
  if not z then
    return {ROOM}
  end
  local v = tonumber(r[2]) + 1
  call('HSET', key, 'v', num(v), 'd', num(d), 'z', z)
  if attrs then
    call('HSET', key, 'a', attrs)
  end
  call('PEXPIREAT', key, num(d + keep))
  index_at(DECLARED.index(kind), d, DECLARED.id(kind, lease, name), tonumber(r[3]))
  return {OK, v, ttl}
end

-- Drops lease `seq`'s records of every kind (cascaded; the caller set
-- ROOT).
function DECLARED.detach(seq)
  for _, kind in ipairs(call('SMEMBERS', R .. 'rk')) do
    for _, name in ipairs(call('ZRANGE', DECLARED.children(kind, seq), 0, -1)) do
      DECLARED.drop(kind, seq, name, CASCADED_)
    end
  end
end

-- Drops up to `max` records of each kind past their deadline (expired).
function DECLARED.reap(max)
  for _, kind in ipairs(call('SMEMBERS', R .. 'rk')) do
    local due_ids = call('ZRANGEBYSCORE', DECLARED.index(kind), '-inf', NOW, 'LIMIT', 0, max)
    for _, id in ipairs(due_ids) do
      local lease, name = string.match(id, '^[^:]*:(%d+):(.*)$')
      DECLARED.drop(kind, lease, name, EXPIRED_)
    end
  end
end

-- The earliest deadline of the epoch's records, or nil.
function DECLARED.due()
  local first
  for _, kind in ipairs(call('SMEMBERS', R .. 'rk')) do
    local head = call('ZRANGE', DECLARED.index(kind), 0, 0, 'WITHSCORES')
    if head[2] and (not first or tonumber(head[2]) < first) then
      first = tonumber(head[2])
    end
  end
  return first
end
