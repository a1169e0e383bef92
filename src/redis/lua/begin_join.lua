-- function: tenant
-- arguments: key, client, ttl_ms, secret, per_listing_max, quota, replay_quota, grace_ms, keep_ms, ikey, ikey_ttl, ikey_quota
-- reply: seq uint, secret text, deadline uint, now uint
-- begin_join: an attempt of `client` on listing `key` for `ttl_ms`;
-- `secret` the token's secret (hex; only its SHA-1 is kept on the
-- attempt); `per_listing_max` attempts_per_listing_max; `quota` the
-- tenant's attempt quota and `replay_quota` its replay quota (-1: off);
-- `grace_ms` replay_grace; `keep_ms` how long the key outlives the replay
-- memory; `ikey` the idempotency key ('' for none), kept `ikey_ttl` ms,
-- under the tenant's idempotency quota `ikey_quota`.
-- Reply: {OK, sequence number, secret, deadline, now}.
local ttl = tonumber(ttl_ms)
local fingerprint = 'join\0' .. key .. '\0' .. client .. '\0' .. ttl_ms
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
local refused = parent_full(pending, tonumber(per_listing_max), PARENT_SCOPE.a)
  or full(ATTEMPTS, tonumber(quota), TENANT_SCOPE.a)
  or full(REPLAY, tonumber(replay_quota), TENANT_SCOPE.r)
  or idempotency_room(ikey, tonumber(ikey_quota))
if refused then
  return refused
end
local d = NOW + ttl
local forget = d + tonumber(grace_ms)
local wanted = {{'a', d, 0}, {'r', forget, 0}}
local room, answer = rooms(with_key(wanted, ikey, tonumber(ikey_ttl)))
if not room then
  return answer
end
local seq = next_fence()
local a = R .. 'a:' .. num(seq)
call('HSET', a, 'k', key, 'pv', p[4], 'c', client, 'h', redis.sha1hex(secret),
  'd', num(d), 'f', num(forget), 'st', 'p', 'v', num(seq), 'rv', room.a[1])
call('PEXPIREAT', a, num(forget + tonumber(keep_ms)))
call('SADD', pending, num(seq))
index_at(ATTEMPTS, d, num(seq))
call('ZADD', REPLAY, num(forget), num(seq))
remember(ikey, fingerprint, tonumber(ikey_ttl), {'s', num(seq), 'x', secret, 'd', num(d)})
return {OK, seq, secret, d, NOW}
