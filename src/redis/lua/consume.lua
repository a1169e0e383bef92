-- function: tenant, replicated
-- arguments: seq, secret, ikey, ikey_ttl, ikey_quota
-- reply: client text, listing text, address text
-- consume: attempt `seq` presented with `secret` (hex); `ikey` the
-- idempotency key ('' for none), kept `ikey_ttl` ms, under the tenant's
-- idempotency quota `ikey_quota`. Bound -> Consumed, exactly once; the
-- attempt then stays as replay memory until its deadline plus
-- replay_grace. With a key, a repeat of the consume that used it answers
-- as that one did (the key's record holds the answer and a SHA-1 of the
-- secret, never the secret). Reply: {OK, client, listing key, address}.
local fingerprint = 'consume\0' .. seq .. '\0' .. redis.sha1hex(secret)
local seen = idempotent(ikey, fingerprint, {'c', 'k', 'ad'})
if seen then
  return seen
end
local code, a = attempt(seq, secret)
if code ~= OK then
  return {code}
end
if a[3] ~= 'b' then
  return {CONFLICT, tonumber(a[5]), CONFLICTED.NOT_BOUND}
end
local refused = key_room(ikey, tonumber(ikey_ttl), tonumber(ikey_quota))
if refused then
  return refused
end
call('HSET', R .. 'a:' .. seq, 'st', 'c', 'v', num(tonumber(a[5]) + 1))
call('SREM', R .. 'pa:' .. a[1], seq)
leave_index(ATTEMPTS, seq, E_ATTEMPTS, CONSUMED_)
remember(ikey, fingerprint, tonumber(ikey_ttl), {'c', a[2], 'k', a[1], 'ad', a[4]})
return {OK, a[2], a[1], a[4]}
