-- function: tenant, replicated
-- arguments: holder, ttl_ms, quota, keep_ms, ikey, ikey_ttl, ikey_quota, per_holder_quota
-- reply: seq uint, version uint, deadline uint, now uint
-- grant: `ttl_ms` the TTL; `quota` the tenant's lease quota (-1: off);
-- `keep_ms` how long a record's key outlives its deadline; `ikey` the
-- idempotency key ('' for none), kept `ikey_ttl` ms, under the tenant's
-- idempotency quota `ikey_quota` (-1: off); `per_holder_quota` the
-- holder's lease quota within the tenant (-1: off).
-- Reply: {OK, fence, version, deadline, now} (fence = sequence number).
local ttl, keep = tonumber(ttl_ms), tonumber(keep_ms)
local fingerprint = 'grant\0' .. holder .. '\0' .. ttl_ms
local seen = idempotent(ikey, fingerprint, {'f', 'v', 'd'})
if seen then
  if seen[1] ~= OK then
    return seen
  end
  return {OK, tonumber(seen[2]), tonumber(seen[3]), tonumber(seen[4]), NOW}
end
reap(REAP_MAX)
local per_holder = tonumber(per_holder_quota)
local holder_set = R .. 'lh:' .. holder
local refused = holder_full(holder_set, per_holder, HOLDER_SCOPE.l)
  or full(LEASES, tonumber(quota), TENANT_SCOPE.l)
  or idempotency_room(ikey, tonumber(ikey_quota))
if refused then
  return refused
end
local d = NOW + ttl
local room, answer = rooms(with_key({{'l', d, 3 * ttl}}, ikey, tonumber(ikey_ttl)))
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
remember(ikey, fingerprint, tonumber(ikey_ttl), {'f', num(f), 'v', num(f), 'd', num(d)})
return {OK, f, f, d, NOW}
