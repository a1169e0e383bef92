-- Room under the store-wide ceilings and budgets: taken, given back and
-- extended, in the meta slot's sets.
--
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
-- again and may be given back (lua/room_stale.lua, src/redis/room.rs).
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
