-- function: tenant
-- enqueue: ARGV[3] queue, ARGV[4] delay (ms, 0 for none), ARGV[5]
-- attempts_max ('' for the queue's), ARGV[6] the queue's wake channel,
-- ARGV[7] idempotency key ('' for none), ARGV[8] idempotency_ttl (ms),
-- ARGV[9] the tenant's idempotency quota, ARGV[10] run_at (ms since the Unix
-- epoch, by this server's clock: not claimable before it; '' for none,
-- exclusive with a delay), ARGV[11] priority (0 first), ARGV[12] a unique
-- key ('' for none), ARGV[13] its window (ms), ARGV[14] its states
-- (letters, `unique_takes`), then one payload per job (one for `enqueue`,
-- a batch's for `enqueue_batch`; one under a unique key), all or none. A
-- unique key taken answers {OK, the job that takes it, 1} and enqueues
-- nothing. With a key, a
-- repeat of the same enqueue answers the jobs it made (the key's record
-- holds the first job's number and a SHA-1 of the payloads, not the
-- payloads). Reply: {OK, the first job's number (the others follow it)} or
-- a refusal.
local name, ikey = ARGV[3], ARGV[7]
local delay = tonumber(ARGV[4])
local due = nil
if delay > 0 then
  due = NOW + delay
elseif ARGV[10] ~= '' and tonumber(ARGV[10]) > NOW then
  due = tonumber(ARGV[10])
end
local attempts = ARGV[5]
if attempts == '' then
  attempts = nil
end
local payloads = {}
local priority = tonumber(ARGV[11])
local ukey = ARGV[12]
for i = 15, #ARGV do
  payloads[#payloads + 1] = ARGV[i]
end
local fingerprint = ''
if ikey ~= '' then
  -- Each payload length-prefixed, so no two batches frame alike; built
  -- only for a key (it copies every payload).
  local framed = {}
  for i, payload in ipairs(payloads) do
    framed[i] = #payload .. ':' .. payload
  end
  fingerprint = 'enqueue\0' .. name .. '\0' .. ARGV[4] .. '\0' .. ARGV[10] .. '\0'
    .. ARGV[5] .. '\0' .. ARGV[11] .. '\0' .. ukey .. '\0' .. ARGV[13] .. '\0' .. ARGV[14]
    .. '\0' .. #payloads .. '\0' .. redis.sha1hex(table.concat(framed))
  local seen = idempotent(ikey, fingerprint, {'j'})
  if seen then
    if seen[1] ~= OK then
      return seen
    end
    return {OK, tonumber(seen[2])}
  end
end
if ukey ~= '' then
  local settled = queue_now(name)
  if not settled then
    return {NOT_FOUND}
  end
  local refused = unique_admits(name, settled, ukey)
  if refused then
    return refused
  end
end
local q, bytes = enqueue_admits(name, payloads)
if not q then
  return bytes
end
local refused = key_room(ikey, tonumber(ARGV[8]), tonumber(ARGV[9]))
if refused then
  return refused
end
local first = enqueue_admitted(name, q, bytes, payloads, due, attempts, priority, ARGV[6])
if ukey ~= '' then
  local ends = num(NOW + tonumber(ARGV[13]))
  call('HSET', qk('qu', name), ukey, first .. ':' .. ends .. ':' .. ARGV[14])
  call('HSET', qk('qk', name), first, ukey)
end
remember(ikey, fingerprint, tonumber(ARGV[8]), {'j', first})
return {OK, tonumber(first)}
