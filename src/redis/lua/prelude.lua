-- The library's shared part (src/redis/scripts.rs builds the library: this,
-- then one registered function per transition, each body in its own file).
-- It is loaded once per server (FUNCTION LOAD), so its helpers are made
-- once, not on every call. Every per-tenant function starts with `begin`,
-- which sets the per-call state below and may answer early:
--
-- KEYS[1]  the tenant's incarnation key, "{<ns>:<tenant>}:inc"; every other
--          key a function touches carries the same hash tag, so the whole
--          call runs in one Cluster slot.
-- ARGV[1]  the store incarnation the client believes in (16 hex digits)
-- ARGV[2]  "r": use the tenant's keyspace only if it is of that incarnation;
--          "c": the client has just checked the incarnation against the
--          store's meta key, so create (or replace) the tenant's record;
--          "l": the same, for a tenant whose record the incarnation had
--          made before (its slot lost it: `meta.lua`);
--          followed by the calling handle's origin (hex), which the
--          removal events it causes carry, and, for a call on something
--          an earlier call issued (an id or a fence), '/' and its number;
--          then, for a call that may
--          create records or was given room, after ';', the store-wide
--          ceilings ('' when all are off, else "<letter><limit>" joined by
--          ',', -1 for off) and, after another ';', the room the engine
--          took for this call (`rooms` below)
-- KEYS[2]  on a standalone server only: the ceilings' room key
--          "{<ns>}:room", so the function takes and gives back room itself
-- A function's own arguments start at ARGV[3].
--
-- Replies are arrays whose first element is a code (src/redis/reply.rs).
local OK, NOT_FOUND, EXPIRED, REVOKED, CONFLICT = 0, 1, 2, 3, 4
local HELD, CAPACITY, STALE, UNKNOWN, RESTARTED, MISMATCH, REPLAYED = 5, 6, 7, 8, 9, 10, 11
local DRAINING = 12
-- The call needs room under a store-wide ceiling that only the engine can
-- take (on a cluster): nothing was written; the needs are in the reply.
local ROOM = 13
-- Streams: the name is taken with other settings; an offset trimmed away
-- (with the first held); a bad argument only the server can judge (with
-- the reason's number, src/redis/reply.rs).
local EXISTS, TRIMMED, INVALID = 14, 15, 16
-- Queues: a claim that is not the job's live one; schedules: a fence that
-- does not hold the scheduler lock.
local STALE_CLAIM, LEADERSHIP_LOST = 17, 18
-- Capacity scopes (src/redis/codes.rs): TENANT_SCOPE, PARENT_SCOPE,
-- CEILING_SCOPE and HOLDER_SCOPE by collection letter, then each
-- mechanism scope by name (S_ENTRIES, Q_JOBS, ...).
@SCOPES@
local S_TENANT, S_PARENT = TENANT_SCOPE.s, PARENT_SCOPE.s
local Q_TENANT, H_TENANT = TENANT_SCOPE.q, TENANT_SCOPE.h

-- Per-call state, set by `begin`. Redis runs one call at a time, so these
-- are never shared between calls in flight.
local KEYS, ARGV, TAG, I, NOW_US, NOW, R, GRAVES, REVOKED_BELOW, REVOKED_UNTIL
local LEASES, LOCKS, IDEM, LISTINGS, ATTEMPTS, REPLAY, MEMBERS, MEMBER_KEYS
-- The tenant's leases by id (every score 0, members `lease_member`'s), for
-- paging in id order; LEASES orders them by deadline. TOMBS: its revoked
-- leases' tombstones by their end, of the incarnation (they outlive a
-- tenant revocation, as in memory), each announced as it ends.
local LEASE_IDS, TOMBS
local ORIGIN, EVENTS, DUE, K, STREAMS, QUEUES, SCHEDULES
local LIMITS, ROOM_KEY, GRANTS, EXTENDED, NEEDS, FREED
-- The removal a cascade in progress started ({cause, collection, id}), or
-- nil: the root its cascaded removals announce.
local ROOT

-- Transactions (`tx.lua`, ADR 0069). While JOURNAL is a table, every write
-- a function makes through `call` first records the commands that undo it
-- (applied newest first by `undo_journal`), and a PUBLISH waits in
-- DEFERRED until the transaction commits. Every function writes through
-- `call`, never `redis.call`, so that a transaction can take back what
-- the operations before a refused one wrote. Outside a transaction `call`
-- is `redis.call` with one test.
local JOURNAL, DEFERRED
-- Per write command: records what undoes it, given its key and its other
-- arguments (the command has not run yet). What a function may call
-- inside a transaction without an undo: READS.
local UNDO, READS
do
local function undo(...)
  JOURNAL[#JOURNAL + 1] = {...}
end

-- Before a write that may empty `key` (Redis then drops the key and its
-- expiry): restores its expiry after the elements come back.
local function keep_expiry(key)
  local at = redis.call('PEXPIRETIME', key)
  if at > 0 then
    undo('PEXPIREAT', key, at)
  end
end

-- A whole key as it is now, restored as it was (or kept absent).
local function keep_key(key)
  local dump = redis.call('DUMP', key)
  if dump then
    local at = redis.call('PEXPIRETIME', key)
    if at > 0 then
      undo('RESTORE', key, at, dump, 'REPLACE', 'ABSTTL')
    else
      undo('RESTORE', key, 0, dump, 'REPLACE')
    end
  else
    undo('DEL', key)
  end
end

-- Sorted-set members with their scores, as ZADD arguments undoing their
-- removal.
local function readd(key, with_scores)
  for i = 1, #with_scores, 2 do
    undo('ZADD', key, with_scores[i + 1], with_scores[i])
  end
end

local ZADD_FLAGS = {NX = true, XX = true, GT = true, LT = true, CH = true}

UNDO = {
  HSET = function(key, a)
    for i = 1, #a, 2 do
      local old = redis.call('HGET', key, a[i])
      if old then
        undo('HSET', key, a[i], old)
      else
        undo('HDEL', key, a[i])
      end
    end
  end,
  HDEL = function(key, a)
    keep_expiry(key)
    for _, field in ipairs(a) do
      local old = redis.call('HGET', key, field)
      if old then
        undo('HSET', key, field, old)
      end
    end
  end,
  ZADD = function(key, a)
    local i = 1
    while ZADD_FLAGS[a[i]] do
      i = i + 1
    end
    for j = i, #a, 2 do
      local old = redis.call('ZSCORE', key, a[j + 1])
      if old then
        undo('ZADD', key, old, a[j + 1])
      else
        undo('ZREM', key, a[j + 1])
      end
    end
  end,
  ZREM = function(key, a)
    keep_expiry(key)
    for _, member in ipairs(a) do
      local old = redis.call('ZSCORE', key, member)
      if old then
        undo('ZADD', key, old, member)
      end
    end
  end,
  ZREMRANGEBYSCORE = function(key, a)
    keep_expiry(key)
    readd(key, redis.call('ZRANGEBYSCORE', key, a[1], a[2], 'WITHSCORES'))
  end,
  ZPOPMIN = function(key, a)
    keep_expiry(key)
    readd(key, redis.call('ZRANGE', key, 0, tonumber(a[1] or 1) - 1, 'WITHSCORES'))
  end,
  SADD = function(key, a)
    for _, member in ipairs(a) do
      if redis.call('SISMEMBER', key, member) == 0 then
        undo('SREM', key, member)
      end
    end
  end,
  SREM = function(key, a)
    keep_expiry(key)
    for _, member in ipairs(a) do
      if redis.call('SISMEMBER', key, member) == 1 then
        undo('SADD', key, member)
      end
    end
  end,
  RPUSH = function(key, a)
    undo('RPOP', key, #a)
  end,
  LPOP = function(key, a)
    keep_expiry(key)
    local popped = redis.call('LRANGE', key, 0, tonumber(a[1] or 1) - 1)
    if #popped > 0 then
      local back = {'LPUSH', key}
      for i = #popped, 1, -1 do
        back[#back + 1] = popped[i]
      end
      JOURNAL[#JOURNAL + 1] = back
    end
  end,
  PEXPIREAT = function(key)
    local at = redis.call('PEXPIRETIME', key)
    if at == -1 then
      undo('PERSIST', key)
    elseif at > 0 then
      undo('PEXPIREAT', key, at)
    end
  end,
  SET = keep_key,
  INCRBY = keep_key,
  LTRIM = keep_key,
  DEL = function(key, a)
    keep_key(key)
    for _, other in ipairs(a) do
      keep_key(other)
    end
  end,
}
UNDO.PEXPIRE = UNDO.PEXPIREAT
-- A field counted up: its old value back (HSET records exactly that).
UNDO.HINCRBY = function(key, a)
  UNDO.HSET(key, {a[1], a[2]})
end

READS = {HGET = true, HMGET = true, HLEN = true, HEXISTS = true, HKEYS = true,
  HSCAN = true, GET = true, EXISTS = true, TIME = true, ZSCORE = true,
  ZCARD = true, ZCOUNT = true, ZRANGE = true, ZREVRANGE = true,
  ZRANGEBYSCORE = true, ZRANGEBYLEX = true, SMEMBERS = true, SCARD = true,
  SISMEMBER = true, LINDEX = true, LRANGE = true, LLEN = true, PTTL = true,
  PEXPIRETIME = true}
end

local function call(command, ...)
  if JOURNAL then
    local record = UNDO[command]
    if record then
      local args = {...}
      local key = table.remove(args, 1)
      record(key, args)
    elseif command == 'PUBLISH' then
      DEFERRED[#DEFERRED + 1] = {...}
      return 0
    elseif not READS[command] then
      error('relaystore: ' .. command .. ' has no undo inside a transaction')
    end
  end
  return redis.call(command, ...)
end

-- Takes back every write recorded since JOURNAL was set, newest first,
-- and ends the journal (and drops what it held to publish).
local function undo_journal()
  local journal = JOURNAL
  JOURNAL, DEFERRED = nil, nil
  for i = #journal, 1, -1 do
    redis.call(unpack(journal[i]))
  end
end

-- Integers as decimal text (Lua numbers are doubles; everything stored
-- stays below 2^53).
local function num(x)
  return string.format('%.0f', x)
end

-- A lease's member in LEASE_IDS: its sequence number, zero-padded so that
-- lexical order is numeric order.
local function lease_member(seq)
  return string.format('%016.0f', tonumber(seq))
end

-- The contract's formulas, as pure functions of their inputs (each the
-- twin of one in src/contract/rules.rs, held to the same table by the
-- `probe` function and tests/redis_rules.rs).

-- The equal-jitter backoff after attempt `attempt` (1-based), base and max
-- in ms, for the random `draw`: half of min(max, base * 2^(attempt - 1))
-- for sure, the draw reduced to between zero and the other half.
local function backoff_delay(base, max, attempt, draw)
  local capped = math.min(max, base * 2 ^ math.min(attempt - 1, 63))
  local fixed = math.floor(capped / 2)
  return fixed + draw % (capped - fixed + 1)
end

-- A schedule's catch-up step at `now` from its next grid point `at`: the
-- grid points passed, the fires (at most `most`), the next grid point.
local function catch_up(at, now, interval, most, room)
  if now < at then
    return 0, 0, at
  end
  local due = math.floor((now - at) / interval) + 1
  local fires = math.min(due, most, room)
  if fires == 0 then
    return due, 0, at
  end
  return due, fires, at + due * interval
end

-- The claim-validity rule: the claim `held`, lapsing at `lapses`, is live
-- at `now` for `token` (tokens as text).
local function claim_live(held, lapses, token, now)
  return held == token and now < lapses
end

-- The server's clock: {microseconds, milliseconds}.
local function clock()
  local t = call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return us, math.floor(us / 1000)
end

-- Store-wide ceilings (ADR 0031). A ceiling spans every tenant, so on a
-- cluster every slot: its count lives in the meta slot, one sorted set per
-- collection (`<base><letter>`, base "{<ns>}:room:") of reservations,
-- token -> horizon (that server's clock, ms). A reservation counts until it
-- is given back (its record left its index) or its horizon passes (the
-- handle that would have given it back died); a record's horizon is never
-- earlier than the record can live, by SKEW: on a cluster the most two
-- primaries' clocks may differ (SKEW_CLUSTER), on one server nothing. On
-- a standalone server a function reaches the sets itself (KEYS[2]); on a
-- cluster the engine takes room between a call that says what it needs
-- (ROOM) and the same call made again with the room.
local SKEW_CLUSTER = 1000
local SKEW

-- Budgets: store-wide limits on what has no deadline (streams, queues,
-- schedules), so their reservations have no horizon. A reservation weighs
-- 1 (the count) and the record's reserved capacity against each of the
-- budget's limits at once. Per letter: the hash `<base><letter>` holds
-- each reservation as "<w2>/<w3>|<its record's key>|<taken at (ms)>",
-- `<base><LETTER>` the sums (fields 1, 2, 3); the limit is
-- "<count>/<l2>/<l3>" (-1: off); the scopes of their refusals are:
--   's' streams: count, bytes, entries
--   'q' queues: count, jobs, bytes
--   'h' schedules: count
local BUDGETS = {
  s = {CEILING_SCOPE.s, S_BYTES_TOTAL, S_ENTRIES_TOTAL},
  q = {CEILING_SCOPE.q, Q_JOBS_TOTAL, Q_BYTES_TOTAL},
  h = {CEILING_SCOPE.h},
}
-- On a cluster a budget's room is taken before its record is written, by
-- a second call; a handle that dies in between leaves room no record
-- holds, and nothing lapses by itself. So a grant is good for
-- BUDGET_GRANT_MS after it was taken (by the record slot's clock: a later
-- call asks again), and a reservation taken BUDGET_RECLAIM_MS ago (by the
-- meta slot's clock) whose record does not hold it can never be held
-- again and may be given back (`stale` in lua/room.lua, src/redis/room.rs).
-- BUDGET_RECLAIM_MS > BUDGET_GRANT_MS + SKEW_CLUSTER, with room to spare.
local BUDGET_GRANT_MS, BUDGET_RECLAIM_MS = 10000, 60000

-- A budget reservation's parts: weights, the record's key, when taken.
local function budget_parts(value)
  return string.match(value, '^([^|]*)|(.*)|(%d+)$')
end
-- "a/b/c" as numbers.
local function numbers(text)
  local out = {}
  for part in string.gmatch(text, '[^/]+') do
    out[#out + 1] = tonumber(part)
  end
  return out
end

-- A reservation's weight on each limit: 1, then its weights.
local function weighs(weights)
  local w = numbers(weights)
  table.insert(w, 1, 1)
  return w
end

-- The refusal if a reservation asked as "<weights>|<record key>" does not
-- fit under budget `letter`'s `limit`, else nil.
local function budget_full(base, letter, limit, asked)
  local limits, want = numbers(limit), weighs(string.match(asked, '^[^|]*'))
  local sums = base .. string.upper(letter)
  for i, scope in ipairs(BUDGETS[letter]) do
    local used = tonumber(call('HGET', sums, i) or '0')
    if limits[i] >= 0 and used + want[i] > limits[i] then
      return {CAPACITY, scope, limits[i], used}
    end
  end
  return nil
end

local function budget_take(base, token, asked, now)
  local letter = string.sub(token, 1, 1)
  call('HSET', base .. letter, token, asked .. '|' .. num(now))
  for i, w in ipairs(weighs(string.match(asked, '^[^|]*'))) do
    call('HINCRBY', base .. string.upper(letter), i, w)
  end
end

local function budget_give(base, token)
  local letter = string.sub(token, 1, 1)
  local value = call('HGET', base .. letter, token)
  if not value then
    return
  end
  call('HDEL', base .. letter, token)
  for i, w in ipairs(weighs(budget_parts(value))) do
    call('HINCRBY', base .. string.upper(letter), i, -w)
  end
end

-- Takes one reservation per `wanted` entry ({letter, limit (-1: none),
-- span in ms}; for a budget, {letter, limit text, "<weights>|<record
-- key>"}), all or none: {OK, token, horizon (for a budget: when it was
-- taken), ...}, or the refusal of the first full ceiling. Reservations
-- past their horizon are dropped when a ceiling is reached (each once), so
-- a set never holds more than its limit and a take below it pays nothing
-- for them.
local function room_take(base, now, wanted)
  for _, w in ipairs(wanted) do
    if BUDGETS[w[1]] then
      local refused = budget_full(base, w[1], w[2], w[3])
      if refused then
        return refused
      end
    else
      local set = base .. w[1]
      local limit = tonumber(w[2])
      if limit >= 0 then
        local used = call('ZCARD', set)
        if used >= limit then
          call('ZREMRANGEBYSCORE', set, '-inf', num(now))
          used = call('ZCARD', set)
        end
        if used >= limit then
          return {CAPACITY, CEILING_SCOPE[w[1]], limit, used}
        end
      end
    end
  end
  local out = {OK}
  local last = call('INCRBY', base .. 'n', #wanted)
  for i, w in ipairs(wanted) do
    local token = w[1] .. num(last - #wanted + i)
    local horizon = now
    if BUDGETS[w[1]] then
      budget_take(base, token, w[3], now)
    else
      horizon = now + tonumber(w[3])
      call('ZADD', base .. w[1], num(horizon), token)
    end
    out[#out + 1] = token
    out[#out + 1] = horizon
  end
  return out
end

-- Gives reservations back (a token starts with its collection's letter).
local function room_give(base, tokens)
  for _, token in ipairs(tokens) do
    local letter = string.sub(token, 1, 1)
    if BUDGETS[letter] then
      budget_give(base, token)
    else
      call('ZREM', base .. letter, token)
    end
  end
end

-- Moves reservations' horizons out to now + `span` (never in; a token
-- given back meanwhile stays given back). Returns the horizon.
local function room_extend(base, now, span, tokens)
  local horizon = now + span
  for _, token in ipairs(tokens) do
    call('ZADD', base .. string.sub(token, 1, 1), 'XX', 'GT', num(horizon), token)
  end
  return horizon
end

-- Removal events (src/redis/events.rs reads them): the collection's
-- letter, the cause's letter, the root ('-', or for a cascade whose root
-- is known the root's cause and collection letters and `<length>:id`),
-- the holder ('-', or for a lease or a lock `h<length>:name`), then the
-- record's id. A record is announced
-- when it leaves its collection's index, and only then, so each removal
-- is announced once whichever call (or sweep) gets to it first.
-- The letters come from src/redis/codes.rs, written in when the library is
-- built.
@EVENT_LETTERS@
local EXPIRED_, REVOKED_, CASCADED_, RELEASED_, CONSUMED_ = 'e', 'r', 'c', 'x', 'u'
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
-- the call that takes it out of its index gives it back.
local function give_back(key)
  local token = call('HGET', key, 'rv')
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
  if index == LEASES then
    call('ZREM', LEASE_IDS, lease_member(id))
    -- A lease counted against its holder's quota (`hq`: the holder).
    local counted = call('HGET', R .. 'l:' .. id, 'hq')
    if counted then
      call('SREM', R .. 'lh:' .. counted, id)
    end
  end
  if call('ZREM', index, id) == 1 then
    local root = '-'
    if cause == CASCADED_ and ROOT then
      root = ROOT[1] .. ROOT[2] .. #ROOT[3] .. ':' .. ROOT[3]
    end
    local holder
    if collection == E_LEASES then
      holder = call('HGET', R .. 'l:' .. id, 'h')
    elseif collection == E_LOCKS then
      holder = call('HGET', R .. 'k:' .. id, 'h')
    end
    holder = holder and ('h' .. #holder .. ':' .. holder) or '-'
    EVENTS[#EVENTS + 1] = collection .. cause .. root .. holder .. id
    local base = R
    if KEPT[collection] then
      base = K
    end
    give_back(base .. collection .. ':' .. id)
  end
end

-- The key names of a tenant's epoch (`r`: its prefix) and incarnation
-- (`k`), made once and remembered for the next calls of the same epoch:
-- building them is a tenth of a short call's server time. At most
-- NAMES_MAX epochs are remembered (then all are forgotten at once), so the
-- library's memory stays bounded; a forgotten epoch's names are made
-- again. Pure values: nothing a call writes depends on whether they were
-- remembered.
local NAMES, NAMES_HELD, NAMES_MAX = {}, 0, 256
local function names_of(r, k)
  if NAMES_HELD >= NAMES_MAX then
    NAMES, NAMES_HELD = {}, 0
  end
  local names = {
    r .. 'ld', r .. 'kd', r .. 'iz', r .. 'px', r .. 'ad', r .. 'ar', r .. 'md', r .. 'mx',
    -- Streams, queues and schedules outlive a tenant revocation (as in
    -- memory): their keys are of the incarnation, not of the epoch.
    k .. 'graves', k, k .. 'sx', k .. 'qn', k .. 'hn', r .. 'lx', k .. 'tz',
  }
  NAMES[r] = names
  NAMES_HELD = NAMES_HELD + 1
  return names
end

-- Makes the epoch of prefix `r` (of this call's tenant and incarnation)
-- the one the call's record functions work on.
local function use_epoch(r)
  R = r
  local names = NAMES[R] or names_of(R, TAG .. I .. ':')
  LEASES, LOCKS, IDEM, LISTINGS = names[1], names[2], names[3], names[4]
  ATTEMPTS, REPLAY, MEMBERS, MEMBER_KEYS = names[5], names[6], names[7], names[8]
  GRAVES, K, STREAMS, QUEUES, SCHEDULES = names[9], names[10], names[11], names[12], names[13]
  LEASE_IDS, TOMBS = names[14], names[15]
end

-- Starts a per-tenant call: the server's clock (it decides every deadline
-- and every visibility question), the tenant's incarnation check, and this
-- incarnation's keys of the tenant. Returns a reply to answer at once, or
-- nil.
local function begin(keys, args)
  KEYS, ARGV = keys, args
  -- A transaction that raised an error left its journal open: no call
  -- after it journals or holds its publishes.
  JOURNAL, DEFERRED = nil, nil
  local inc = KEYS[1]
  TAG = string.sub(inc, 1, -4)
  I = ARGV[1]
  -- The ceilings and the room come only with calls that may need them
  -- (LIMITS stays nil otherwise, and `rooms` refuses to run).
  local head, grants = ARGV[2], ''
  LIMITS = nil
  if string.find(head, ';', 1, true) then
    head, LIMITS, grants = string.match(head, '^([^;]*);([^;]*);(.*)$')
  end
  local mode = string.sub(head, 1, 1)
  local issued
  ORIGIN, issued = string.match(head, '^.(%x*)/?(%d*)$')
  issued = tonumber(issued)
  -- NEEDS, FREED and GRANTS are made when first needed: most calls have
  -- none, and every table a call makes costs the server time.
  EVENTS, DUE, NEEDS, FREED, GRANTS, EXTENDED, ROOT = {}, nil, nil, nil, nil, nil, nil
  ROOM_KEY = keys[2]
  -- One server has one clock.
  SKEW = ROOM_KEY and 0 or SKEW_CLUSTER
  if grants ~= '' then
    GRANTS = {}
    for token, horizon in string.gmatch(grants, '([^,@]+)@(%d+)') do
      local first = string.sub(token, 1, 1)
      if first == '+' then
        EXTENDED = EXTENDED or {swaps = {}}
        EXTENDED.at = tonumber(horizon)
      elseif first == '>' then
        -- A reservation on a share that did not answer, replaced by a new
        -- one on another share (`extend_room` in src/redis/room.rs).
        local was, now = string.match(token, '^>(%S+) (%S+)$')
        EXTENDED = EXTENDED or {swaps = {}}
        EXTENDED.swaps[was] = {now}
      else
        GRANTS[string.sub(token, 1, 1)] = {token, tonumber(horizon)}
      end
    end
  end
  NOW_US, NOW = clock()
  local seen = call('HMGET', inc, 'i', 'e', 'rv', 'ru', 'b')
  local epoch = '0'
  REVOKED_BELOW, REVOKED_UNTIL = 0, 0
  -- `b`, set on a record made again in the same store incarnation (its
  -- slot lost the tenant's keys: a master that came back empty): every id
  -- and fence issued since is at least that (`next_fence`), every one the
  -- lost record issued below it, and `Restarted`. A record made for the
  -- first time has none: nothing of the incarnation was lost.
  local born = 0
  if seen[1] == I then
    epoch = seen[2] or '0'
    REVOKED_BELOW = tonumber(seen[3] or '0')
    REVOKED_UNTIL = tonumber(seen[4] or '0')
    born = tonumber(seen[5] or '0')
  elseif mode == 'c' then
    call('DEL', inc)
    call('HSET', inc, 'i', I)
  elseif mode == 'l' then
    born = math.max(tonumber(call('GET', TAG .. 'ctr') or '0') + 1, NOW_US)
    call('DEL', inc)
    call('HSET', inc, 'i', I, 'b', num(born))
  elseif seen[1] then
    return {STALE}
  else
    return {UNKNOWN}
  end
  if issued and issued < born then
    return {RESTARTED}
  end
  -- The tenant's keys of this incarnation and epoch (revoke_tenant starts
  -- a new epoch; the old one's keys are buried a few at a time).
  use_epoch(TAG .. I .. ':' .. epoch .. ':')
  return nil
end

-- Room under the store-wide ceilings for the records a creation is about
-- to write, each `wanted` entry {letter, until (ms: the latest the record
-- may live without asking again), extra (ms more to ask for, so a
-- renewable record asks for more only now and then)}, or under a budget
-- {letter, weights ("<w2>/<w3>"), the record's key}. Call it after every
-- other check, right before the writes. Returns {letter -> {token, until
-- it counts (ms)}} ('' and '' when no ceiling is on), or nil and the
-- answer to give: the ceiling's refusal, or ROOM when the engine must take
-- the room first (a cluster).
local function rooms(wanted)
  local got = {}
  if not LIMITS then
    error('relaystore: a creation was called without the ceilings')
  end
  if LIMITS == '' then
    for _, w in ipairs(wanted) do
      got[w[1]] = {'', ''}
    end
    return got
  end
  -- What to ask for: a span (ms), or a budget's weights and record.
  local span = function(w)
    if BUDGETS[w[1]] then
      return w[2] .. '|' .. w[3]
    end
    return num(w[2] - NOW + w[3] + 2 * SKEW)
  end
  local until_of = function(w, horizon)
    if BUDGETS[w[1]] then
      return ''
    end
    return num(horizon - SKEW)
  end
  if ROOM_KEY then
    local ask = {}
    for _, w in ipairs(wanted) do
      local limit = string.match(',' .. LIMITS, ',' .. w[1] .. '([^,]*)')
      ask[#ask + 1] = {w[1], limit or '-1', span(w)}
    end
    local taken = room_take(ROOM_KEY .. ':', NOW, ask)
    if taken[1] ~= OK then
      return nil, taken
    end
    for i, w in ipairs(wanted) do
      got[w[1]] = {taken[2 * i], until_of(w, taken[2 * i + 1])}
    end
    return got
  end
  local short = false
  for _, w in ipairs(wanted) do
    local g = GRANTS and GRANTS[w[1]]
    -- A budget's grant was taken for this call's record, and is good
    -- for BUDGET_GRANT_MS.
    local good = false
    if g and BUDGETS[w[1]] then
      good = NOW - g[2] <= BUDGET_GRANT_MS
    elseif g then
      good = g[2] - SKEW >= w[2]
    end
    if good then
      got[w[1]] = {g[1], until_of(w, g[2])}
    else
      short = true
      NEEDS = NEEDS or {}
      NEEDS[#NEEDS + 1] = w[1] .. span(w)
    end
  end
  if short then
    return nil, {ROOM}
  end
  for letter in pairs(got) do
    GRANTS[letter].used = true
  end
  return got
end

-- The reservation tokens of the records under `keys`.
local function tokens_of(keys)
  local out = {}
  for _, key in ipairs(keys) do
    local token = call('HGET', key, 'rv')
    if token and token ~= '' then
      out[#out + 1] = token
    end
  end
  return out
end

-- A record counted until `z` ('': no ceiling was on) is to live until `d`:
-- returns the `z` to keep, moving the reservations of the records under
-- `keys()` out first if `d` is past `z`; or nil when the engine must move
-- them (a cluster; the caller answers ROOM). On a cluster the engine may
-- have replaced a reservation whose share did not answer by one on
-- another share: the record then keeps the new token, and the old one is
-- given back (it lapses at its horizon if its share stays away).
local function cover(z, d, extra, keys)
  if not z or z == '' or tonumber(z) >= d then
    return z or ''
  end
  local span = d - NOW + extra + 2 * SKEW
  local horizon = EXTENDED and EXTENDED.at
  if ROOM_KEY then
    horizon = room_extend(ROOM_KEY .. ':', NOW, span, tokens_of(keys()))
  end
  if horizon and horizon - SKEW >= d then
    if EXTENDED then
      for _, key in ipairs(keys()) do
        local swap = EXTENDED.swaps[call('HGET', key, 'rv') or '']
        if swap and not swap.used then
          swap.used = true
          FREED = FREED or {}
          FREED[#FREED + 1] = call('HGET', key, 'rv')
          call('HSET', key, 'rv', swap[1])
        end
      end
    end
    return num(horizon - SKEW)
  end
  NEEDS = NEEDS or {}
  NEEDS[#NEEDS + 1] = '+' .. num(span) .. ' ' .. table.concat(tokens_of(keys()), ' ')
  return nil
end

-- The next fence (and lease sequence number): above every earlier one of
-- the tenant, and at least the server's clock in microseconds, so a tenant
-- whose keys were lost still never goes backwards.
local function next_fence()
  local last = tonumber(call('GET', TAG .. 'ctr') or '0')
  local f = math.max(last + 1, NOW_US)
  call('SET', TAG .. 'ctr', num(f))
  return f
end

-- A lease's state now: OK (live), NOT_FOUND, EXPIRED or REVOKED. A lease
-- issued before the tenant was revoked reads as REVOKED while that
-- revocation's tombstone would live. Also returns the lease's `fields`
-- (read in the same HMGET) as a table.
-- Takes `child` out of the child set `<prefix><lease>` ('la:' locks, 'lp:'
-- listings, 'lm:' presence, 'ls:' streams) of the lease the record under
-- `key` hangs from, if it hangs from one. Call it before the record goes.
local function unlink(key, prefix, child)
  local lease = call('HGET', key, 'l')
  if lease and lease ~= '' then
    call('SREM', R .. prefix .. lease, child)
  end
end

local function lease_state(seq, ...)
  local l = call('HMGET', R .. 'l:' .. seq, 'd', 'x', ...)
  if not l[1] then
    if tonumber(seq) < REVOKED_BELOW and NOW < REVOKED_UNTIL then
      return REVOKED
    end
    return NOT_FOUND
  elseif l[2] then
    return REVOKED
  elseif tonumber(l[1]) <= NOW then
    return EXPIRED
  end
  return OK, {unpack(l, 3)}
end

-- The listing under `key` if visible (it exists and its lease is live):
-- its fields {lease, attrs, version, publication, the lease's deadline (the
-- listing's own)}, or nil. The publication (its first version) tells a
-- re-published key from the listing an attempt joined; updates do not
-- change it.
local function visible_listing(key)
  local p = call('HMGET', R .. 'p:' .. key, 'l', 'a', 'v', 'o')
  if not p[1] then
    return nil
  end
  local state, l = lease_state(p[1], 'd')
  if state ~= OK then
    return nil
  end
  p[5] = l[1]
  return p
end

-- Drops an attempt that is pending or bound (not the replay memory of a
-- consumed one), announced with `cause`.
local function drop_attempt(seq, key, cause)
  leave_index(ATTEMPTS, seq, E_ATTEMPTS, cause)
  call('DEL', R .. 'a:' .. seq)
  call('ZREM', REPLAY, seq)
  call('SREM', R .. 'pa:' .. key, seq)
end

-- Removes the listing under `key` (announced with `cause`) and its
-- pending and bound attempts (cascaded).
local function drop_listing(key, cause)
  local pk = R .. 'p:' .. key
  local pending = R .. 'pa:' .. key
  local outer = ROOT
  if cause ~= CASCADED_ then
    ROOT = {cause, E_LISTINGS, key}
  end
  for _, seq in ipairs(call('SMEMBERS', pending)) do
    drop_attempt(seq, key, CASCADED_)
  end
  ROOT = outer
  leave_index(LISTINGS, key, E_LISTINGS, cause)
  unlink(pk, 'lp:', key)
  -- A listing counted against its publisher's quota (`hq`: the holder).
  local counted = call('HGET', pk, 'hq')
  if counted then
    call('SREM', R .. 'ph:' .. counted, key)
  end
  call('DEL', pending, pk)
end


-- Removes `member`'s presence record, announced with `cause`.
local function drop_member(member, cause)
  local mk = R .. 'm:' .. member
  unlink(mk, 'lm:', member)
  leave_index(MEMBERS, member, E_PRESENCE, cause)
  call('DEL', mk)
  call('ZREM', MEMBER_KEYS, member)
end

-- `member`'s presence record if visible (not past its deadline, and its
-- lease, if it has one, live): {attrs, lease, version, deadline, until
-- it counts under the ceiling}, or nil.
local function visible_member(member)
  local m = call('HMGET', R .. 'm:' .. member, 'a', 'l', 'v', 'd', 'z')
  if not m[1] or tonumber(m[4]) <= NOW or (m[2] ~= '' and lease_state(m[2]) ~= OK) then
    return nil
  end
  return m
end

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

-- Queues (SPEC §10), under K like streams. A queue is `q:<name>` (a hash:
-- `c` its settings as created, `jm` jobs_max, `bm` bytes_max, `dm`
-- dead_letters_max, `vis` visibility (ms), `am` attempts_max, `bb` and
-- `bx` the backoff's base and max (ms), `nb` payload bytes held, `rv` its
-- reservation) and, per job (by sequence number): hashes of payloads
-- `qp:`, attempts `qa:`, attempts_max `qm:`, the live claim's token `qt:`
-- and worker `qw:`, a dead letter's reason `qy:`, a priority above 0 `qn:`;
-- and one sorted set per state: ready `qr:` (scored by priority; members
-- of one score sort as strings, and job numbers are fences, at least the
-- server's clock in microseconds, so 16 digits from 2001 to 2286 and
-- sorted as numbers: oldest first), delayed `qd:`
-- (by due time), claimed `qc:` (by the time the claim lapses), dead `qx:`
-- (by number). Each job is in exactly one of the four. QUEUES indexes the
-- tenant's queues. Unique keys (`JobOptions::unique`): `qu:` maps a key to
-- "<job>:<window's end, ms>:<states>" (the states that keep it taken after
-- the window: 'w' waiting, 'c' claimed, 'd' dead), a job's key is in `qk:`,
-- and `ql:` holds the keys whose job left, by their window's end.
local QUEUE_FIELDS = {'qp', 'qa', 'qm', 'qt', 'qw', 'qy', 'qn', 'qk'}
local QUEUE_UNIQUE = {'qu', 'ql'}
local QUEUE_STATES = {'qr', 'qd', 'qc', 'qx'}

local function qk(part, name)
  return K .. part .. ':' .. name
end

-- The queue `name`'s settings and bytes {jm, bm, dm, vis, am, bb, bx, nb}
-- as numbers, or nil.
local function queue_of(name)
  local q = call('HMGET', K .. 'q:' .. name, 'jm', 'bm', 'dm', 'vis', 'am', 'bb', 'bx', 'nb')
  if not q[1] then
    return nil
  end
  for i = 1, 8 do
    q[i] = tonumber(q[i])
  end
  return q
end

-- Makes job `seq` of queue `name` ready, in its priority's place.
local function make_ready(name, seq)
  local priority = call('HGET', qk('qn', name), seq) or '0'
  call('ZADD', qk('qr', name), priority, seq)
end

-- Unique key `key` of queue `name`: its job's number (a string), its
-- window's end and its states; nil if the queue does not remember it.
local function unique_hold(name, key)
  local hold = call('HGET', qk('qu', name), key)
  if not hold then
    return nil
  end
  local seq, ends, states = string.match(hold, '^(%d+):(%d+):(%a*)$')
  return seq, tonumber(ends), states
end

-- Whether a hold (as `unique_hold` reads it) takes its key now: within its
-- window whatever became of the job, after it while the job is in one of
-- its states.
local function unique_takes(name, seq, ends, states)
  if NOW < ends then
    return true
  end
  local has = function(letter)
    return string.find(states, letter, 1, true) ~= nil
  end
  if call('ZSCORE', qk('qr', name), seq) or call('ZSCORE', qk('qd', name), seq) then
    return has('w')
  elseif call('ZSCORE', qk('qc', name), seq) then
    return has('c')
  elseif call('ZSCORE', qk('qx', name), seq) then
    return has('d')
  end
  return false
end

-- Forgets the unique keys whose job left and whose window ended by now.
local function forget_lapsed_keys(name)
  local lingering = qk('ql', name)
  for _, key in ipairs(call('ZRANGEBYSCORE', lingering, '-inf', NOW)) do
    call('ZREM', lingering, key)
    local seq = unique_hold(name, key)
    if seq and call('HEXISTS', qk('qp', name), seq) == 0 then
      call('HDEL', qk('qu', name), key)
    end
  end
end

-- Whether queue `name` (settings `q`, settled) takes a job under unique
-- key `key` now: nil if so (a key no longer taken is forgotten first),
-- else the reply: {OK, the job that takes it, 1} or a refusal for want
-- of room for one more key (`jobs_max` of them).
local function unique_admits(name, q, key)
  forget_lapsed_keys(name)
  local seq, ends, states = unique_hold(name, key)
  if seq then
    if unique_takes(name, seq, ends, states) then
      return {OK, tonumber(seq), 1}
    end
    call('HDEL', qk('qu', name), key)
  end
  local held = call('HLEN', qk('qu', name))
  if held >= q[1] then
    return {CAPACITY, Q_UNIQUE, q[1], held}
  end
  return nil
end

-- The reason a job whose last claim lapsed is dead-lettered with: `LAPSED`
-- in src/contract/names.rs, put here when the library is built.
local LAPSED = '@LAPSED@'

-- Moves what is due in queue `name` now: delayed jobs become ready; a
-- lapsed claim returns its job to ready, or makes it a dead letter (reason
-- `LAPSED`) if that was its last attempt. Only through `queue_now`.
local function settle(name)
  local delayed = qk('qd', name)
  for _, seq in ipairs(call('ZRANGEBYSCORE', delayed, '-inf', NOW)) do
    call('ZREM', delayed, seq)
    make_ready(name, seq)
  end
  local claimed = qk('qc', name)
  for _, seq in ipairs(call('ZRANGEBYSCORE', claimed, '-inf', NOW)) do
    call('ZREM', claimed, seq)
    call('HDEL', qk('qt', name), seq)
    call('HDEL', qk('qw', name), seq)
    local used = tonumber(call('HGET', qk('qa', name), seq))
    if used >= tonumber(call('HGET', qk('qm', name), seq)) then
      call('ZADD', qk('qx', name), seq, seq)
      call('HSET', qk('qy', name), seq, LAPSED)
    else
      make_ready(name, seq)
    end
  end
end

-- Queue `name` as `queue_of` gives it, with what fell due by now settled
-- first, or nil. Every function that reads or changes jobs starts here, so
-- no call's answer depends on whether another call, a read included, came
-- first.
local function queue_now(name)
  local q = queue_of(name)
  if q then
    settle(name)
  end
  return q
end

-- The time until something in queue `name` changes by itself (a delay
-- ends, a claim lapses), in ms, or -1.
local function queue_next(name)
  local next_at = -1
  for _, part in ipairs({'qd', 'qc'}) do
    local first = call('ZRANGE', qk(part, name), 0, 0, 'WITHSCORES')
    if first[2] then
      local at = tonumber(first[2])
      if next_at < 0 or at < next_at then
        next_at = at
      end
    end
  end
  if next_at < 0 then
    return -1
  end
  return math.max(next_at - NOW, 0)
end

-- The one validity rule of every claim operation: nil when `token` is job
-- `seq`'s live claim now, else the refusal. Checked before any change.
local function check_claim(name, seq, token)
  if call('HEXISTS', qk('qp', name), seq) == 0 then
    return {NOT_FOUND}
  end
  local lapses = call('ZSCORE', qk('qc', name), seq)
  if not lapses or not claim_live(call('HGET', qk('qt', name), seq), tonumber(lapses), token, NOW) then
    return {STALE_CLAIM}
  end
  return nil
end

-- Queue `name` (as `queue_now` gives it) if `token` is job `seq`'s live
-- claim; else nil and the refusal to answer ({NOT_FOUND} or
-- {STALE_CLAIM}). Where every change by a claim holder starts.
local function claimed_job(name, seq, token)
  local q = queue_now(name)
  if not q then
    return nil, {NOT_FOUND}
  end
  local refused = check_claim(name, seq, token)
  if refused then
    return nil, refused
  end
  return q
end

-- Takes job `seq` out of its claim (it is about to move elsewhere).
local function unclaim(name, seq)
  call('ZREM', qk('qc', name), seq)
  call('HDEL', qk('qt', name), seq)
  call('HDEL', qk('qw', name), seq)
end

-- Removes job `seq` of queue `name` in whatever state it is.
local function remove_job(name, seq)
  local payload = call('HGET', qk('qp', name), seq)
  if not payload then
    return
  end
  -- Its unique key stays remembered until the window ends.
  local key = call('HGET', qk('qk', name), seq)
  if key then
    local held, ends = unique_hold(name, key)
    if held and tonumber(held) == tonumber(seq) then
      call('ZADD', qk('ql', name), num(ends), key)
    end
  end
  for _, part in ipairs(QUEUE_FIELDS) do
    call('HDEL', qk(part, name), seq)
  end
  for _, part in ipairs(QUEUE_STATES) do
    call('ZREM', qk(part, name), seq)
  end
  call('HINCRBY', K .. 'q:' .. name, 'nb', -#payload)
end

-- How many more jobs of `size` bytes queue `name` (settings `q`, as
-- `queue_now` gives them) takes now: what `enqueue_jobs` checks, as a
-- count.
local function queue_room(name, q, size)
  if call('ZCARD', qk('qx', name)) >= q[3] then
    return 0
  end
  local room = q[1] - call('HLEN', qk('qp', name))
  if size > 0 then
    room = math.min(room, math.floor((q[2] - q[8]) / size))
  end
  return math.max(room, 0)
end

-- Whether queue `name` takes one job per entry of `payloads` now, all or
-- none: the one admission rule of enqueues. A queue at its dead-letter cap
-- takes nothing, nor one whose jobs or bytes would pass its caps. Returns
-- the queue's settings (`queue_now`'s) and the payloads' bytes, or nil and
-- the refusal. Writes nothing.
local function enqueue_admits(name, payloads)
  local q = queue_now(name)
  if not q then
    return nil, {NOT_FOUND}
  end
  local dead = call('ZCARD', qk('qx', name))
  if dead >= q[3] then
    return nil, {CAPACITY, Q_DEAD, q[3], dead}
  end
  local held = call('HLEN', qk('qp', name))
  if held + #payloads > q[1] then
    return nil, {CAPACITY, Q_JOBS, q[1], held}
  end
  local bytes = 0
  for _, payload in ipairs(payloads) do
    bytes = bytes + #payload
  end
  if q[8] + bytes > q[2] then
    return nil, {CAPACITY, Q_BYTES, q[2], q[8]}
  end
  return q, bytes
end

-- Enqueues on queue `name` (settings `q`) the `payloads` that
-- `enqueue_admits` admitted (`bytes` in all): ready, or delayed until `due`
-- (nil: ready), with `attempts` claims each (nil: the queue's), at
-- `priority` (nil: 0). Ready jobs wake the queue's workers (`wake`, its
-- channel). Returns the first job's number (the others follow it:
-- `next_fence` issues consecutive numbers within one call).
local function enqueue_admitted(name, q, bytes, payloads, due, attempts, priority, wake)
  local first
  priority = priority or 0
  for _, payload in ipairs(payloads) do
    local seq = num(next_fence())
    first = first or seq
    call('HSET', qk('qp', name), seq, payload)
    call('HSET', qk('qa', name), seq, '0')
    call('HSET', qk('qm', name), seq, attempts or num(q[5]))
    if priority > 0 then
      call('HSET', qk('qn', name), seq, priority)
    end
    if due then
      call('ZADD', qk('qd', name), num(due), seq)
    else
      call('ZADD', qk('qr', name), priority, seq)
    end
  end
  call('HINCRBY', K .. 'q:' .. name, 'nb', bytes)
  if not due then
    publish_wake(wake)
  end
  return first
end

-- Enqueues one job per entry of `payloads` on queue `name`, all or none
-- (`enqueue_admits`, then `enqueue_admitted`). Returns the first job's
-- number, or nil and the refusal.
local function enqueue_jobs(name, payloads, due, attempts, wake)
  local q, bytes = enqueue_admits(name, payloads)
  if not q then
    return nil, bytes
  end
  return enqueue_admitted(name, q, bytes, payloads, due, attempts, nil, wake)
end

-- Removes queue `name` with every job in it, announced with `cause`.
local function drop_queue(name, cause)
  leave_index(QUEUES, name, E_QUEUES, cause)
  local keys = {K .. 'q:' .. name}
  for _, parts in ipairs({QUEUE_FIELDS, QUEUE_STATES, QUEUE_UNIQUE}) do
    for _, part in ipairs(parts) do
      keys[#keys + 1] = qk(part, name)
    end
  end
  call('DEL', unpack(keys))
end

-- Drops what is attached to lease `seq` (the cascade of its removal for
-- `cause`): its locks, its presence records, its listings and their
-- attempts, its streams, its endpoints.
local function detach(seq, cause)
  local outer = ROOT
  ROOT = {cause, E_LEASES, seq}
  local att = R .. 'la:' .. seq
  for _, name in ipairs(call('SMEMBERS', att)) do
    local k = R .. 'k:' .. name
    if call('HGET', k, 'l') == seq then
      leave_index(LOCKS, name, E_LOCKS, CASCADED_)
      call('DEL', k)
    end
  end
  local members = R .. 'lm:' .. seq
  for _, member in ipairs(call('SMEMBERS', members)) do
    if call('HGET', R .. 'm:' .. member, 'l') == seq then
      drop_member(member, CASCADED_)
    end
  end
  call('DEL', members)
  local published = R .. 'lp:' .. seq
  for _, key in ipairs(call('SMEMBERS', published)) do
    if call('HGET', R .. 'p:' .. key, 'l') == seq then
      drop_listing(key, CASCADED_)
    end
  end
  local streams = R .. 'ls:' .. seq
  for _, name in ipairs(call('SMEMBERS', streams)) do
    if call('HGET', K .. 's:' .. name, 'l') == seq then
      drop_stream(name, CASCADED_)
    end
  end
  call('DEL', att, published, streams, R .. 'le:' .. seq)
  ROOT = outer
end

-- What a buried lease held that outlives the epoch: its streams. Its
-- holder's per-holder sets go with the epoch too.
local function bury_lease(grave, seq)
  local counted = call('HGET', grave .. 'l:' .. seq, 'hq')
  if counted then
    call('DEL', grave .. 'lh:' .. counted, grave .. 'ph:' .. counted)
  end
  for _, name in ipairs(call('SMEMBERS', grave .. 'ls:' .. seq)) do
    if call('HGET', K .. 's:' .. name, 'l') == seq then
      drop_stream(name)
    end
  end
end

-- The keys of an epoch a tenant revocation ended, by the index that
-- lists them: each index member's keys under these prefixes.
-- The third element: the prefix of the index's records whose
-- reservations burial gives back (before any index deletes the record:
-- pending attempts before all attempts, presence deadlines before
-- presence keys). The fourth: what else to do for each member first.
local GRAVE_INDEXES = {
  {'ld', {'l:', 'la:', 'lp:', 'lm:', 'le:', 'ls:'}, 'l:', bury_lease},
  {'lx', {}},
  {'kd', {'k:'}, 'k:'},
  {'px', {'p:', 'pa:'}, 'p:'},
  {'ad', {}, 'a:'},
  {'ar', {'a:'}},
  {'md', {}, 'm:'},
  {'mx', {'m:'}},
  {'iz', {'i:'}},
}

-- Ends up to `max` live records of the ended epoch `grave` as a
-- revocation ends them, through the same functions, so each is announced
-- once (ADR 0071): its leases, each with what hangs from it (`Revoked`,
-- or `Expired` for one whose deadline had passed when the tenant was
-- revoked, at `<grave>at`), then the presence records of its own. A lock
-- of its own, replay memory and idempotency records end unannounced, as
-- in memory. Returns what is left of `max`.
local function end_grave(grave, max)
  local ended = call('HMGET', grave .. 'at', 'at', 'tu')
  local at, tombstone = tonumber(ended[1] or '0'), ended[2]
  local current = R
  use_epoch(grave)
  local left = max
  local leases = call('ZRANGE', LEASES, 0, left - 1, 'WITHSCORES')
  for i = 1, #leases, 2 do
    local seq = leases[i]
    local cause = tonumber(leases[i + 1]) > at and REVOKED_ or EXPIRED_
    leave_index(LEASES, seq, E_LEASES, cause)
    detach(seq, cause)
    call('DEL', R .. 'l:' .. seq)
    -- A revoked lease leaves a tombstone until the revocation's own end,
    -- announced then (reads answer Revoked through the tenant's record).
    if cause == REVOKED_ and tombstone then
      call('ZADD', TOMBS, tombstone, seq)
    end
    left = left - 1
  end
  if left > 0 then
    local members = call('ZRANGE', MEMBERS, 0, left - 1, 'WITHSCORES')
    for i = 1, #members, 2 do
      drop_member(members[i], tonumber(members[i + 1]) > at and REVOKED_ or EXPIRED_)
      left = left - 1
    end
  end
  use_epoch(current)
  return left
end

-- Deletes up to `max` records of the oldest ended epoch (and the keys that
-- hang off them), ending its live ones first (`end_grave`); forgets the
-- epoch once its indexes are empty.
local function bury(max)
  local grave = call('LINDEX', GRAVES, 0)
  if not grave then
    return
  end
  local left = end_grave(grave, max)
  if left <= 0 then
    return
  end
  for _, index in ipairs(GRAVE_INDEXES) do
    local key = grave .. index[1]
    local members = call('ZRANGE', key, 0, left - 1)
    for _, member in ipairs(members) do
      if index[4] then
        index[4](grave, member)
      end
      if index[3] then
        give_back(grave .. index[3] .. member)
      end
      for _, prefix in ipairs(index[2]) do
        call('DEL', grave .. prefix .. member)
      end
    end
    if #members > 0 then
      call('ZREM', key, unpack(members))
    end
    left = left - #members
    if left <= 0 then
      return
    end
  end
  call('LPOP', GRAVES)
  call('DEL', grave .. 'at')
end

-- Clean-up run by every creating function, at most `max` entries of each
-- index: leases past their deadline lose what is attached to them and
-- leave the deadline index; lapsed locks and attempts leave theirs.
-- Records stay (reads say Expired) until their key's own expiry removes
-- them; replay memory stays until its own deadline.
local REAP_MAX = 16
-- Drops up to `max` entries of the replay memory past their time: a
-- consumed token's memory is announced as it leaves (an attempt that was
-- never consumed was announced when it expired, and leaves quietly).
local function forget_replay(max)
  for _, seq in ipairs(call('ZRANGEBYSCORE', REPLAY, '-inf', NOW, 'LIMIT', 0, max)) do
    if call('HGET', R .. 'a:' .. seq, 'st') == 'c' then
      leave_index(REPLAY, seq, E_REPLAY, EXPIRED_)
    else
      call('ZREM', REPLAY, seq)
    end
  end
end

-- Drops up to `max` idempotency records past their time, announced.
local function forget_keys(max)
  for _, ikey in ipairs(call('ZRANGEBYSCORE', IDEM, '-inf', NOW, 'LIMIT', 0, max)) do
    leave_index(IDEM, ikey, E_IDEMPOTENCY, EXPIRED_)
  end
end

local function reap(max)
  bury(max)
  -- A creating call reaps one time in four (the clock's microseconds
  -- decide), which still reaps 4 entries per index per creation on
  -- average: more than expire, since every entry was made by a creation.
  -- A full quota reaps everything regardless (`full`).
  if max == REAP_MAX and NOW_US % 4 ~= 0 then
    return
  end
  for _, seq in ipairs(call('ZRANGEBYSCORE', LEASES, '-inf', NOW, 'LIMIT', 0, max)) do
    leave_index(LEASES, seq, E_LEASES, EXPIRED_)
    detach(seq, EXPIRED_)
  end
  for _, name in ipairs(call('ZRANGEBYSCORE', LOCKS, '-inf', NOW, 'LIMIT', 0, max)) do
    unlink(R .. 'k:' .. name, 'la:', name)
    leave_index(LOCKS, name, E_LOCKS, EXPIRED_)
  end
  for _, seq in ipairs(call('ZRANGEBYSCORE', ATTEMPTS, '-inf', NOW, 'LIMIT', 0, max)) do
    local key = call('HGET', R .. 'a:' .. seq, 'k')
    if key then
      call('SREM', R .. 'pa:' .. key, seq)
    end
    leave_index(ATTEMPTS, seq, E_ATTEMPTS, EXPIRED_)
  end
  for _, member in ipairs(call('ZRANGEBYSCORE', MEMBERS, '-inf', NOW, 'LIMIT', 0, max)) do
    drop_member(member, EXPIRED_)
  end
  forget_replay(max)
  forget_keys(max)
  for _, seq in ipairs(call('ZRANGEBYSCORE', TOMBS, '-inf', NOW, 'LIMIT', 0, max)) do
    leave_index(TOMBS, seq, E_TOMBSTONES, EXPIRED_)
  end
end

-- Live entries of an index: by deadline, or every member of the
-- listings' index (a listing lives as long as its lease).
local function live(index)
  if index == LISTINGS then
    return call('ZCARD', index)
  end
  return call('ZCOUNT', index, '(' .. num(NOW), '+inf')
end

-- Refuses a creation when `count()` is already at `limit` (limit < 0: no
-- quota). At the limit, everything expired is reaped first (each entry is
-- reaped once, so this is paid once per entry), so entries that died with
-- their lease never refuse anyone. Returns nil when there is room.
local function at_limit(count, limit, scope)
  if limit < 0 then
    return nil
  end
  local used = count()
  if used >= limit then
    reap(1000000000)
    used = count()
  end
  if used >= limit then
    return {CAPACITY, scope, limit, used}
  end
  return nil
end

-- A tenant's quota: `index` counts its live entries.
local function full(index, limit, scope)
  return at_limit(function() return live(index) end, limit, scope)
end

-- A holder's quota: the set `set` holds its leases, or its listings.
local function holder_full(set, limit, scope)
  return at_limit(function() return call('SCARD', set) end, limit, scope)
end

-- Refuses a child when its parent's set of children `set` already holds
-- `cap` (the per-parent caps: listings per lease, attempts per listing,
-- locks and presence records per lease). Returns nil when there is room.
local function parent_full(set, cap, scope)
  local held = call('SCARD', set)
  if held >= cap then
    return {CAPACITY, scope, cap, held}
  end
  return nil
end

-- An idempotency record under `ikey` for a creation with `fingerprint`:
-- nil if there is none (or it lapsed); {MISMATCH} if it was made with other
-- parameters; else its stored fields `fields`.
local function idempotent(ikey, fingerprint, fields)
  if ikey == '' then
    return nil
  end
  local seen = call('HMGET', R .. 'i:' .. ikey, 'p', 'e', unpack(fields))
  if not seen[1] or tonumber(seen[2]) <= NOW then
    return nil
  end
  if seen[1] ~= fingerprint then
    return {MISMATCH}
  end
  return {OK, unpack(seen, 3)}
end

-- `wanted` (room for `rooms`) with room under the idempotency ceiling
-- for the record a creation with key `ikey` remembers for `ttl` ms.
local function with_key(wanted, ikey, ttl)
  if ikey ~= '' then
    wanted[#wanted + 1] = {'i', NOW + ttl, 0}
  end
  return wanted
end

-- Remembers a creation under `ikey` for `ttl` ms: `pairs` are its fields.
local function remember(ikey, fingerprint, ttl, pairs)
  if ikey == '' then
    return
  end
  local ik = R .. 'i:' .. ikey
  local e = NOW + ttl
  call('DEL', ik)
  call('HSET', ik, 'p', fingerprint, 'e', num(e), unpack(pairs))
  call('PEXPIREAT', ik, num(e))
  call('ZADD', IDEM, num(e), ikey)
end

-- Room for a new idempotency record (nil if there is, or no key).
local function idempotency_room(ikey, limit)
  if ikey == '' then
    return nil
  end
  forget_keys(REAP_MAX)
  return full(IDEM, limit, TENANT_SCOPE.i)
end

-- Room for the record a call that creates nothing else remembers under
-- `ikey` for `ttl` ms (consume, enqueue, append): under the tenant's
-- idempotency quota `limit` and the store-wide ceiling. Nil when there is
-- room, or no key; else the answer to give. Call it after every other
-- check, right before the writes.
local function key_room(ikey, ttl, limit)
  if ikey == '' then
    return nil
  end
  local refused = idempotency_room(ikey, limit)
  if refused then
    return refused
  end
  local room, answer = rooms(with_key({}, ikey, ttl))
  if not room then
    return answer
  end
  return nil
end

-- Attempt `seq` presented with `secret`: {code, fields} where fields are
-- {listing key, client, state, address, version}. A wrong secret reads as
-- a missing attempt; a consumed attempt is REPLAY (checked before its
-- listing, so a replay is always refused as one) until its replay memory
-- lapses; an attempt whose listing (this publication of it) or lease is
-- gone is NOT_FOUND.
local function attempt(seq, secret)
  local a = call('HMGET', R .. 'a:' .. seq, 'k', 'c', 'st', 'ad', 'v', 'h', 'd', 'pv', 'f')
  if not a[1] or (secret and redis.sha1hex(secret) ~= a[6]) then
    return NOT_FOUND
  end
  if a[3] == 'c' then
    if tonumber(a[9]) <= NOW then
      return NOT_FOUND
    end
    return REPLAYED
  end
  local p = visible_listing(a[1])
  if not p or p[4] ~= a[8] then
    return NOT_FOUND
  end
  if tonumber(a[7]) <= NOW then
    return EXPIRED
  end
  return OK, a
end

-- One page of a key-ordered index: scans `limit` keys after `after` (''
-- from the start) and keeps the visible ones. Reply: {OK, more (1 if the
-- scan filled `limit`), last key scanned, then for each visible key the key
-- followed by the values `view` gives it (nil: not visible)}.
local function page(index, after, limit, view)
  local from = '-'
  if after ~= '' then
    from = '(' .. after
  end
  local keys = call('ZRANGEBYLEX', index, from, '+', 'LIMIT', 0, limit)
  local out = {OK, 0, ''}
  if #keys == limit then
    out[2] = 1
  end
  if #keys > 0 then
    out[3] = keys[#keys]
  end
  for _, key in ipairs(keys) do
    local values = view(key)
    if values then
      table.insert(out, key)
      for _, value in ipairs(values) do
        table.insert(out, value)
      end
    end
  end
  return out
end

-- Ends a per-tenant call: {reply} when it removed nothing, moved no
-- deadline earlier and has no room to take or give back; else {reply,
-- events, last number, due (-1: none), room needed, room to give back}
-- (grants the call did not use are given back).
-- Removals are numbered from the tenant's event counter and published on
-- the store's channel for every instance (origin, tenant, the last
-- number, then the events, each as `<length>:<bytes>`).
local function finish(reply)
  if GRANTS then
    for _, g in pairs(GRANTS) do
      if not g.used then
        FREED = FREED or {}
        FREED[#FREED + 1] = g[1]
      end
    end
  end
  if EXTENDED then
    for _, swap in pairs(EXTENDED.swaps) do
      if not swap.used then
        FREED = FREED or {}
        FREED[#FREED + 1] = swap[1]
      end
    end
  end
  local n = #EVENTS
  if n == 0 then
    if DUE or NEEDS or FREED then
      return {reply, {}, 0, DUE or -1, NEEDS or {}, FREED or {}}
    end
    return {reply}
  end
  local last = call('INCRBY', TAG .. 'evs', n)
  local ns, tenant = string.match(TAG, '^{(.*):([^:]*)}:$')
  local parts = {ORIGIN, tenant, tostring(last)}
  for _, e in ipairs(EVENTS) do
    parts[#parts + 1] = e
  end
  for i, p in ipairs(parts) do
    parts[i] = #p .. ':' .. p
  end
  call('PUBLISH', 'relaystore:' .. ns .. ':events', table.concat(parts))
  return {reply, EVENTS, last, DUE or -1, NEEDS or {}, FREED or {}}
end

-- Every per-tenant function's body by operation name (src/redis/scripts.rs
-- fills it), so that a transaction (`tx.lua`) can run several in one call.
local OPS = {}

-- A notify staged in a transaction: ARGV[3] the wakes channel, ARGV[4]
-- the message (src/redis/wakes.rs makes it), published at the commit.
OPS.wake = function()
  call('PUBLISH', ARGV[3], ARGV[4])
  return {OK}
end
