-- Quotas (per tenant, per holder, per parent) and idempotency records.
--
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
-- locks and presence records per lease, a kind's records per lease: a
-- sorted set, `card` 'ZCARD'). Returns nil when there is room.
local function parent_full(set, cap, scope, card)
  local held = call(card or 'SCARD', set)
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
