-- What the library announces: removal events, the sweeper's due index,
-- and wakes.
--
-- Removal events (src/redis/events.rs reads them): the collection's
-- letter, the cause's letter, the root ('-', or for a cascade whose root
-- is known the root's cause and collection letters and `<length>:id`),
-- the holder ('-', or for a lease or a lock `h<length>:name`), then the
-- record's id. A record is announced
-- when it leaves its collection's index, and only then, so each removal
-- is announced once whichever call (or sweep) gets to it first.
-- The letters (a collection's E_LEASES, ..., a cause's EXPIRED_, ...) come
-- from src/redis/codes.rs, written in when the library is built.
@EVENT_LETTERS@
-- The collections whose records are under K (they outlive a tenant's
-- revocation), not R.
local KEPT = {s = true, q = true, h = true}

-- The sweeper's view of the tenant: `nd` on its incarnation key is the
-- earliest deadline the store's due index has for it. A deadline set
-- below it is recorded, and DUE tells the engine to lower the tenant's
-- place in the index. While `nd` is past (its sweep has not happened yet,
-- or an engine died before lowering the index), a write that sets a
-- deadline asks again, at most once a second (`na`: when it last asked),
-- so a lost update heals without a busy tenant paying a second call on
-- every write between two sweeps.
local HEAL_MS = 1000
local function due(d)
  local seen = call('HMGET', KEYS[1], 'nd', 'na')
  local nd = tonumber(seen[1] or '-1')
  if nd < 0 or d < nd then
    call('HSET', KEYS[1], 'nd', num(d))
    DUE = d
  elseif nd <= NOW and NOW - tonumber(seen[2] or '0') >= HEAL_MS then
    call('HSET', KEYS[1], 'na', num(NOW))
    DUE = nd
  end
end

-- Puts `id` in the deadline `index` at `d` (`old`: its deadline before, if
-- it had one; only an earlier deadline can move the tenant's next one).
local function index_at(index, d, id, old)
  call('ZADD', index, num(d), id)
  if not old or d < old then
    due(d)
  end
end

-- Gives back the reservation of the record under `key` (its `rv` field),
-- if it has one. A record keeps its field after it left its index (a
-- lease reads as expired, a consumed attempt is replay memory), so only
-- the call that takes it out of its index gives it back. `token`: the
-- field as the caller read it (nil: read it here).
local function give_back(key, token)
  if token == nil then
    token = call('HGET', key, 'rv')
  end
  if token and token ~= '' then
    if ROOM_KEY then
      room_give(ROOM_KEY .. ':', {token})
    else
      FREED = FREED or {}
      FREED[#FREED + 1] = token
    end
  end
end

-- Removes `id` from `index` and, if it was there, announces it and gives
-- its room back (the record's key, "<collection>:<id>", must still be
-- there: callers delete it after).
local function leave_index(index, id, collection, cause)
  -- A lease's fields this needs, read at once: its holder, its
  -- reservation, and `hq`, the holder whose quota counted it (if one did).
  local lease
  if index == LEASES then
    lease = call('HMGET', R .. 'l:' .. id, 'h', 'rv', 'hq')
    call('ZREM', LEASE_IDS, lease_member(id))
    if lease[3] then
      call('SREM', R .. 'lh:' .. lease[3], id)
    end
  end
  if call('ZREM', index, id) == 1 then
    local root = '-'
    if cause == CASCADED_ and ROOT then
      root = ROOT[1] .. ROOT[2] .. #ROOT[3] .. ':' .. ROOT[3]
    end
    -- A lease's or a lock's holder and reservation (nil: give_back reads
    -- the reservation of another kind's record).
    local holder, token
    if lease then
      holder, token = lease[1], lease[2]
    elseif collection == E_LOCKS then
      local lock = call('HMGET', R .. 'k:' .. id, 'h', 'rv')
      holder, token = lock[1], lock[2]
    end
    holder = holder and ('h' .. #holder .. ':' .. holder) or '-'
    EVENTS[#EVENTS + 1] = collection .. cause .. root .. holder .. id
    local base = R
    if KEPT[collection] then
      base = K
    end
    give_back(base .. collection .. ':' .. id, token)
  end
end

-- Wakes the listeners of `channel` on every instance (the message that
-- src/redis/events.rs reads: origin, tenant, channel, each as
-- `<length>:<bytes>`; the calling handle wakes its own).
local function publish_wake(channel)
  local ns, tenant = string.match(TAG, '^{(.*):([^:]*)}:$')
  local parts = {ORIGIN, tenant, channel}
  for i, p in ipairs(parts) do
    parts[i] = #p .. ':' .. p
  end
  call('PUBLISH', 'relaystore:' .. ns .. ':wakes', table.concat(parts))
end
