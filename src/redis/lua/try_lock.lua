-- function: tenant, replicated
-- arguments: name, owner, ttl, lease, quota, per_lease_max, keep
-- reply: fence uint, version uint, remaining millis
-- try_lock: `ttl` in ms; `lease` the sequence number of the lease to
-- attach to ('' for none); `quota` the tenant's lock quota (-1: off);
-- `per_lease_max` locks_per_lease_max; `keep` how long the key outlives
-- the deadline (ms). Reply: {OK, fence, version, remaining} or {HELD} when
-- another live owner holds it.
ttl = tonumber(ttl)
local k = R .. 'k:' .. name
reap(REAP_MAX)
local cur = call('HMGET', k, 'd', 'l')
if cur[1] then
  if tonumber(cur[1]) > NOW and (cur[2] == '' or lease_state(cur[2]) == OK) then
    return {HELD}
  end
  -- Lapsed, or its lease is gone: the name is free.
  unlink(k, 'la:', name)
  leave_index(LOCKS, name, E_LOCKS, tonumber(cur[1]) > NOW and CASCADED_ or EXPIRED_)
end
if lease ~= '' then
  local state = lease_state(lease)
  if state ~= OK then
    return {state}
  end
  local refused = parent_full(R .. 'la:' .. lease, tonumber(per_lease_max), PARENT_SCOPE.k)
  if refused then
    return refused
  end
end
local refused = full(LOCKS, tonumber(quota), TENANT_SCOPE.k)
if refused then
  return refused
end
local d = NOW + ttl
local room, answer = rooms({{'k', d, 3 * ttl}})
if not room then
  return answer
end
local f = next_fence()
call('HSET', k, 'h', owner, 'f', num(f), 'v', num(f), 'd', num(d), 'l', lease,
  'z', room.k[2], 'rv', room.k[1])
call('PEXPIREAT', k, num(d + tonumber(keep)))
index_at(LOCKS, d, name)
if lease ~= '' then
  call('SADD', R .. 'la:' .. lease, name)
end
return {OK, f, f, ttl}
