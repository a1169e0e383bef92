-- Shared head of every per-tenant script (src/redis/scripts.rs prepends it).
--
-- KEYS[1]  the tenant's incarnation key, "{<ns>:<tenant>}:inc"; every other
--          key the script touches carries the same hash tag, so the whole
--          script runs in one Cluster slot.
-- ARGV[1]  the store incarnation the client believes in (16 hex digits)
-- ARGV[2]  "r": use the tenant's keyspace only if it is of that incarnation;
--          "c": the client has just checked the incarnation against the
--          store's meta key, so create (or replace) the tenant's record
-- The script's own arguments start at ARGV[3].
--
-- Replies are arrays whose first element is a code (src/redis/reply.rs).
local OK, NOT_FOUND, EXPIRED, REVOKED, CONFLICT = 0, 1, 2, 3, 4
local HELD, CAPACITY, STALE, UNKNOWN, RESTARTED, MISMATCH = 5, 6, 7, 8, 9, 10

local INC = KEYS[1]
local TAG = string.sub(INC, 1, -4)
local I = ARGV[1]

-- The server's clock decides every deadline and every visibility question.
local clock = redis.call('TIME')
local NOW_US = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local NOW = math.floor(NOW_US / 1000)

-- Integers as decimal text (Lua numbers are doubles; everything stored
-- stays below 2^53).
local function num(x)
  return string.format('%.0f', x)
end

local seen = redis.call('HMGET', INC, 'i', 'b')
local BORN
if seen[1] == I then
  BORN = tonumber(seen[2])
elseif ARGV[2] == 'c' then
  redis.call('HSET', INC, 'i', I, 'b', num(NOW_US))
  BORN = NOW_US
elseif seen[1] then
  return {STALE}
else
  return {UNKNOWN}
end

-- This incarnation's keys of the tenant.
local R = TAG .. I .. ':'
local LEASES = R .. 'ld'
local LOCKS = R .. 'kd'
local IDEM = R .. 'iz'

-- The next fence (and lease sequence number): above every earlier one of
-- the tenant, and at least the server's clock in microseconds, so a tenant
-- whose keys were lost still never goes backwards.
local function next_fence()
  local last = tonumber(redis.call('GET', TAG .. 'ctr') or '0')
  local f = math.max(last + 1, NOW_US)
  redis.call('SET', TAG .. 'ctr', num(f))
  return f
end

-- A lease's state now: OK (live), NOT_FOUND, EXPIRED or REVOKED.
local function lease_state(seq)
  local l = redis.call('HMGET', R .. 'l:' .. seq, 'd', 'x')
  if not l[1] then
    return NOT_FOUND
  elseif l[2] then
    return REVOKED
  elseif tonumber(l[1]) <= NOW then
    return EXPIRED
  end
  return OK
end

-- Drops the locks attached to lease `seq` (the cascade).
local function detach(seq)
  local att = R .. 'la:' .. seq
  for _, name in ipairs(redis.call('SMEMBERS', att)) do
    local k = R .. 'k:' .. name
    if redis.call('HGET', k, 'l') == seq then
      redis.call('DEL', k)
      redis.call('ZREM', LOCKS, name)
    end
  end
  redis.call('DEL', att)
end

-- Bounded clean-up run by every creating script: leases past their
-- deadline lose their locks and leave the deadline index; lapsed locks
-- leave theirs. Records stay (reads say Expired) until their key's own
-- expiry removes them.
local REAP_MAX = 16
local function reap()
  for _, seq in ipairs(redis.call('ZRANGEBYSCORE', LEASES, '-inf', NOW, 'LIMIT', 0, REAP_MAX)) do
    detach(seq)
    redis.call('ZREM', LEASES, seq)
  end
  for _, name in ipairs(redis.call('ZRANGEBYSCORE', LOCKS, '-inf', NOW, 'LIMIT', 0, REAP_MAX)) do
    local lease = redis.call('HGET', R .. 'k:' .. name, 'l')
    if lease and lease ~= '' then
      redis.call('SREM', R .. 'la:' .. lease, name)
    end
    redis.call('ZREM', LOCKS, name)
  end
end

-- Refuses a creation when `index` already counts `limit` live entries
-- (limit < 0: no quota). Returns nil when there is room.
local function full(index, limit, scope)
  if limit < 0 then
    return nil
  end
  local used = redis.call('ZCOUNT', index, '(' .. num(NOW), '+inf')
  if used >= limit then
    return {CAPACITY, scope, limit, used}
  end
  return nil
end
