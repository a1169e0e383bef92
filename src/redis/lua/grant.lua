-- grant: ARGV[3] holder, ARGV[4] ttl (ms), ARGV[5] the tenant's lease quota
-- (-1: off), ARGV[6] how long a record's key outlives its deadline (ms),
-- ARGV[7] idempotency key ('' for none), ARGV[8] idempotency_ttl (ms),
-- ARGV[9] the tenant's idempotency quota (-1: off).
-- Reply: {OK, fence, version, deadline, now} (fence = sequence number).
local holder, ttl = ARGV[3], tonumber(ARGV[4])
local keep = tonumber(ARGV[6])
local ikey = ARGV[7]
local ik = R .. 'i:' .. ikey
local fingerprint = holder .. '\0' .. ARGV[4]
if ikey ~= '' then
  local seen = redis.call('HMGET', ik, 'p', 'f', 'v', 'd', 'e')
  if seen[1] and tonumber(seen[5]) > NOW then
    if seen[1] ~= fingerprint then
      return {MISMATCH}
    end
    return {OK, tonumber(seen[2]), tonumber(seen[3]), tonumber(seen[4]), NOW}
  end
end
reap()
local refused = full(LEASES, tonumber(ARGV[5]), 1)
if refused then
  return refused
end
if ikey ~= '' then
  redis.call('ZREMRANGEBYSCORE', IDEM, '-inf', NOW)
  refused = full(IDEM, tonumber(ARGV[9]), 4)
  if refused then
    return refused
  end
end
local f = next_fence()
local d = NOW + ttl
local k = R .. 'l:' .. num(f)
redis.call('HSET', k, 'h', holder, 'v', num(f), 'd', num(d))
redis.call('PEXPIREAT', k, num(d + keep))
redis.call('ZADD', LEASES, num(d), num(f))
if ikey ~= '' then
  local e = NOW + tonumber(ARGV[8])
  redis.call('HSET', ik, 'p', fingerprint, 'f', num(f), 'v', num(f), 'd', num(d), 'e', num(e))
  redis.call('PEXPIREAT', ik, num(e))
  redis.call('ZADD', IDEM, num(e), ikey)
end
return {OK, f, f, d, NOW}
