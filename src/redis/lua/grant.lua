-- function: tenant, replicated
-- grant: ARGV[3] holder, ARGV[4] ttl (ms), ARGV[5] the tenant's lease quota
-- (-1: off), ARGV[6] how long a record's key outlives its deadline (ms),
-- ARGV[7] idempotency key ('' for none), ARGV[8] idempotency_ttl (ms),
-- ARGV[9] the tenant's idempotency quota (-1: off), ARGV[10] the holder's
-- lease quota within the tenant (-1: off).
-- Reply: {OK, fence, version, deadline, now} (fence = sequence number).
local holder, ttl = ARGV[3], tonumber(ARGV[4])
local keep = tonumber(ARGV[6])
local ikey = ARGV[7]
local fingerprint = 'grant\0' .. holder .. '\0' .. ARGV[4]
local seen = idempotent(ikey, fingerprint, {'f', 'v', 'd'})
if seen then
  if seen[1] ~= OK then
    return seen
  end
  return {OK, tonumber(seen[2]), tonumber(seen[3]), tonumber(seen[4]), NOW}
end
reap(REAP_MAX)
local per_holder = tonumber(ARGV[10])
local holder_set = R .. 'lh:' .. holder
local refused = holder_full(holder_set, per_holder, HOLDER_SCOPE.l)
  or full(LEASES, tonumber(ARGV[5]), TENANT_SCOPE.l)
  or idempotency_room(ikey, tonumber(ARGV[9]))
if refused then
  return refused
end
local d = NOW + ttl
local room, answer = rooms(with_key({{'l', d, 3 * ttl}}, ikey, tonumber(ARGV[8])))
if not room then
  return answer
end
local f = next_fence()
local k = R .. 'l:' .. num(f)
call('HSET', k, 'h', holder, 'v', num(f), 'd', num(d), 'z', room.l[2], 'rv', room.l[1])
call('PEXPIREAT', k, num(d + keep))
if per_holder >= 0 then
  call('HSET', k, 'hq', holder)
  call('SADD', holder_set, num(f))
end
index_at(LEASES, d, num(f))
call('ZADD', LEASE_IDS, 0, lease_member(f))
remember(ikey, fingerprint, tonumber(ARGV[8]), {'f', num(f), 'v', num(f), 'd', num(d)})
return {OK, f, f, d, NOW}
