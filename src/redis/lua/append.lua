-- append: ARGV[3] name, ARGV[4] payload, ARGV[5] the stream's wake
-- channel (its followers are woken with the entry, so a follower on any
-- instance wakes even if the caller dies right after). Entries past the
-- stream's age go first; then a full stream refuses, or trims its oldest
-- entries, as created. Reply: {OK, offset} or a refusal.
local name, payload = ARGV[3], ARGV[4]
local s = visible_stream(name)
if not s then
  return {NOT_FOUND}
end
local em, bm, n = tonumber(s[1]), tonumber(s[2]), tonumber(s[6])
if #payload > bm then
  return {INVALID, 1}
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
else
  while len > 0 and (len >= em or b + #payload > bm) do
    b = b - pop_entries(name, 1)
    len = len - 1
  end
end
local times = K .. 'st:' .. name
-- Append times never fall, so the age search can bisect.
local last = tonumber(redis.call('LINDEX', times, -1) or '0')
redis.call('RPUSH', entries, payload)
redis.call('RPUSH', times, num(math.max(NOW, last)))
redis.call('HSET', K .. 's:' .. name, 'n', num(n + 1), 'b', num(b + #payload))
publish_wake(ARGV[5])
return {OK, n}
