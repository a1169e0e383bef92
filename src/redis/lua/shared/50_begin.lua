-- A per-tenant call's start: the tenant's key names, the incarnation
-- check (`begin`), room for what it creates, fences.
--
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
