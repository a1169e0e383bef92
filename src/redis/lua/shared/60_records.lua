-- The per-entity records' reads and removals: a lease's state, a listing,
-- an attempt, a member; and a page of a key-ordered index.
--
-- Takes `child` out of the child set `<prefix><lease>` ('la:' locks, 'lp:'
-- listings, 'lm:' presence, 'ls:' streams) of the lease the record under
-- `key` hangs from, if it hangs from one. Call it before the record goes.
local function unlink(key, prefix, child)
  local lease = call('HGET', key, 'l')
  if lease and lease ~= '' then
    call('SREM', R .. prefix .. lease, child)
  end
end


-- A lease's state now: OK (live), NOT_FOUND, EXPIRED or REVOKED. A lease
-- issued before the tenant was revoked reads as REVOKED while that
-- revocation's tombstone would live. Also returns the lease's `fields`
-- (read in the same HMGET) as a table.
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
-- it counts under the ceiling}, or nil. `live`: a lease the caller has
-- just found live, which is not read again.
local function visible_member(member, live)
  local m = call('HMGET', R .. 'm:' .. member, 'a', 'l', 'v', 'd', 'z')
  if not m[1] or tonumber(m[4]) <= NOW then
    return nil
  end
  if m[2] ~= '' and m[2] ~= live and lease_state(m[2]) ~= OK then
    return nil
  end
  return m
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
