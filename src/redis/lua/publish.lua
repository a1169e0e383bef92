-- function: tenant
-- arguments: lease, key, attrs, per_lease_max, quota, ikey, ikey_ttl, ikey_quota, per_holder_quota
-- reply: version uint, remaining millis
-- publish: listing `key` with `attrs` under lease `lease`;
-- `per_lease_max` listings_per_lease_max; `quota` the tenant's listing
-- quota (-1: off); `ikey` the idempotency key ('' for none), kept
-- `ikey_ttl` ms, under the tenant's idempotency quota `ikey_quota` (-1:
-- off); `per_holder_quota` the lease holder's listing quota within the
-- tenant (-1: off).
-- Reply: {OK, version, ms left (the lease's, now: a repeat reports it
-- too)}; CONFLICT with the version of a visible listing under the key; the
-- lease's state if it is not live.
local fingerprint = 'publish\0' .. lease .. '\0' .. key .. '\0' .. attrs
local seen = idempotent(ikey, fingerprint, {'v'})
if seen then
  if seen[1] ~= OK then
    return seen
  end
  local live, d = lease_state(lease, 'd')
  local left = 0
  if live == OK then
    left = tonumber(d[1]) - NOW
  end
  return {OK, tonumber(seen[2]), left}
end
local state, l = lease_state(lease, 'd', 'z', 'h')
if state ~= OK then
  return {state}
end
local current = visible_listing(key)
if current then
  return {CONFLICT, tonumber(current[3]), CONFLICTED.NAME_TAKEN}
end
reap(REAP_MAX)
-- A listing under the key whose lease is gone: the name is free.
if call('EXISTS', R .. 'p:' .. key) == 1 then
  drop_listing(key, CASCADED_)
end
local published = R .. 'lp:' .. lease
local per_holder = tonumber(per_holder_quota)
local holder_set = R .. 'ph:' .. l[3]
local refused = parent_full(published, tonumber(per_lease_max), PARENT_SCOPE.p)
  or holder_full(holder_set, per_holder, HOLDER_SCOPE.p)
  or full(LISTINGS, tonumber(quota), TENANT_SCOPE.p) or idempotency_room(ikey, tonumber(ikey_quota))
if refused then
  return refused
end
-- A listing counts as long as its lease does: its reservation lasts as
-- long as the lease's, and moves out with it.
local wanted = {{'p', tonumber(l[2]) or tonumber(l[1]), 0}}
local room, answer = rooms(with_key(wanted, ikey, tonumber(ikey_ttl)))
if not room then
  return answer
end
local v = next_fence()
call('HSET', R .. 'p:' .. key, 'l', lease, 'a', attrs, 'v', num(v), 'o', num(v),
  'rv', room.p[1])
call('ZADD', LISTINGS, 0, key)
call('SADD', published, key)
if per_holder >= 0 then
  call('HSET', R .. 'p:' .. key, 'hq', l[3])
  call('SADD', holder_set, key)
end
remember(ikey, fingerprint, tonumber(ikey_ttl), {'v', num(v)})
return {OK, v, tonumber(l[1]) - NOW}
