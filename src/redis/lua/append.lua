-- function: tenant
-- arguments: name, payload, wake, ikey, ikey_ttl, quota
-- reply: offset uint
-- append: `wake` the stream's wake channel (its followers are woken with
-- the entry, so a follower on any instance wakes even if the caller dies
-- right after); `ikey` an idempotency key ('' for none); `ikey_ttl`
-- idempotency_ttl (ms); `quota` the tenant's idempotency quota. Entries past the stream's age go first; then a full
-- stream refuses, or trims its oldest entries, as created. With a key, a
-- repeat of the same append answers its offset (the key's record holds the
-- offset and a SHA-1 of the payload, not the payload). Reply: {OK, offset}
-- or a refusal.
local fingerprint = ''
if ikey ~= '' then
  fingerprint = 'append\0' .. name .. '\0' .. redis.sha1hex(payload)
  local seen = idempotent(ikey, fingerprint, {'o'})
  if seen then
    if seen[1] ~= OK then
      return seen
    end
    return {OK, tonumber(seen[2])}
  end
end
local s = visible_stream(name)
if not s then
  return {NOT_FOUND}
end
local em, bm, n = tonumber(s[1]), tonumber(s[2]), tonumber(s[6])
if #payload > bm then
  return {INVALID, BAD_PAYLOAD}
end
local entries = K .. 'sp:' .. name
local len, b = drop_aged(name, s)
if s[4] == 'r' then
  if len + 1 > em then
    return {CAPACITY, S_ENTRIES, em, len}
  end
  if b + #payload > bm then
    return {CAPACITY, S_ENTRIES, bm, b}
  end
end
local refused = key_room(ikey, tonumber(ikey_ttl), tonumber(quota))
if refused then
  return refused
end
if s[4] ~= 'r' then
  while len > 0 and (len >= em or b + #payload > bm) do
    b = b - pop_entries(name, 1)
    len = len - 1
  end
end
local times = K .. 'st:' .. name
-- Append times never fall, so the age search can bisect.
local last = tonumber(call('LINDEX', times, -1) or '0')
call('RPUSH', entries, payload)
call('RPUSH', times, num(math.max(NOW, last)))
call('HSET', K .. 's:' .. name, 'n', num(n + 1), 'b', num(b + #payload))
publish_wake(wake)
remember(ikey, fingerprint, tonumber(ikey_ttl), {'o', num(n)})
return {OK, n}
