-- What a removal takes with it: a lease's cascade, a tenant's burial, and
-- the reaping of what expired.
--
-- Drops what is attached to lease `seq` (the cascade of its removal for
-- `cause`): its locks, its presence records, its listings and their
-- attempts, its records of the declared kinds, its streams, its
-- endpoints.
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
  DECLARED.detach(seq)
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
  call('DEL', grave .. 'at', grave .. 'rk')
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
  DECLARED.reap(max)
  forget_replay(max)
  forget_keys(max)
  for _, seq in ipairs(call('ZRANGEBYSCORE', TOMBS, '-inf', NOW, 'LIMIT', 0, max)) do
    leave_index(TOMBS, seq, E_TOMBSTONES, EXPIRED_)
  end
end
