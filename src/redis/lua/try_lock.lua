-- function: tenant, replicated
-- try_lock: ARGV[3] name, ARGV[4] owner, ARGV[5] ttl (ms), ARGV[6] the lease
-- sequence number to attach to ('' for none), ARGV[7] the tenant's lock
-- quota (-1: off), ARGV[8] locks_per_lease_max, ARGV[9] how long the key
-- outlives the deadline (ms). Reply: {OK, fence, version, remaining} or
-- {HELD} when another live owner holds it.
local name, owner, ttl, lease = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
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
  local refused = parent_full(R .. 'la:' .. lease, tonumber(ARGV[8]), PARENT_SCOPE.k)
  if refused then
    return refused
  end
end
local refused = full(LOCKS, tonumber(ARGV[7]), TENANT_SCOPE.k)
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
call('PEXPIREAT', k, num(d + tonumber(ARGV[9])))
index_at(LOCKS, d, name)
if lease ~= '' then
  call('SADD', R .. 'la:' .. lease, name)
end
return {OK, f, f, ttl}
