-- function: tenant
-- begin_join: ARGV[3] listing key, ARGV[4] client, ARGV[5] ttl (ms),
-- ARGV[6] the token's secret (hex; only its SHA-1 is kept on the attempt),
-- ARGV[7] attempts_per_listing_max, ARGV[8] the tenant's attempt quota,
-- ARGV[9] its replay quota (-1: off), ARGV[10] replay_grace (ms), ARGV[11]
-- how long the key outlives the replay memory (ms), ARGV[12] idempotency
-- key ('' for none), ARGV[13] idempotency_ttl (ms), ARGV[14] the tenant's
-- idempotency quota. Reply: {OK, sequence number, secret, deadline, now}.
local key, client, ttl = ARGV[3], ARGV[4], tonumber(ARGV[5])
local ikey = ARGV[12]
local fingerprint = 'join\0' .. key .. '\0' .. client .. '\0' .. ARGV[5]
local seen = idempotent(ikey, fingerprint, {'s', 'x', 'd'})
if seen then
  if seen[1] ~= OK then
    return seen
  end
  return {OK, tonumber(seen[2]), seen[3], tonumber(seen[4]), NOW}
end
local p = visible_listing(key)
if not p then
  return {NOT_FOUND}
end
reap(REAP_MAX)
local pending = R .. 'pa:' .. key
local refused = parent_full(pending, tonumber(ARGV[7]), PARENT_SCOPE.a)
  or full(ATTEMPTS, tonumber(ARGV[8]), TENANT_SCOPE.a)
  or full(REPLAY, tonumber(ARGV[9]), TENANT_SCOPE.r)
  or idempotency_room(ikey, tonumber(ARGV[14]))
if refused then
  return refused
end
local d = NOW + ttl
local forget = d + tonumber(ARGV[10])
local wanted = {{'a', d, 0}, {'r', forget, 0}}
local room, answer = rooms(with_key(wanted, ikey, tonumber(ARGV[13])))
if not room then
  return answer
end
local seq = next_fence()
local a = R .. 'a:' .. num(seq)
call('HSET', a, 'k', key, 'pv', p[4], 'c', client, 'h', redis.sha1hex(ARGV[6]),
  'd', num(d), 'f', num(forget), 'st', 'p', 'v', num(seq), 'rv', room.a[1])
call('PEXPIREAT', a, num(forget + tonumber(ARGV[11])))
call('SADD', pending, num(seq))
index_at(ATTEMPTS, d, num(seq))
call('ZADD', REPLAY, num(forget), num(seq))
remember(ikey, fingerprint, tonumber(ARGV[13]), {'s', num(seq), 'x', ARGV[6], 'd', num(d)})
return {OK, seq, ARGV[6], d, NOW}
