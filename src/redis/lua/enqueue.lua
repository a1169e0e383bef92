-- function: tenant
-- arguments: name, delay, attempts_max, wake, ikey, ikey_ttl, ikey_quota, run_at, priority, ukey, ukey_window, ukey_states, ...payloads
-- enqueue: `name` the queue, `delay` ms (0 for none), `attempts_max`
-- ('' for the queue's), `wake` the queue's wake channel, `ikey` an
-- idempotency key ('' for none), `ikey_ttl` idempotency_ttl (ms),
-- `ikey_quota` the tenant's idempotency quota, `run_at` ms since the Unix
-- epoch, by this server's clock: not claimable before it ('' for none,
-- exclusive with a delay), `priority` (0 first), `ukey` a unique key (''
-- for none), `ukey_window` its window (ms), `ukey_states` its states
-- (letters, `unique_takes`), then `payloads`, one per job (one for
-- `enqueue`, a batch's for `enqueue_batch`; one under a unique key), all
-- or none. A unique key taken answers {OK, the job that takes it, 1} and
-- enqueues nothing. With a key, a repeat of the same enqueue answers the
-- jobs it made (the key's record holds the first job's number and a
-- SHA-1 of the payloads, not the payloads). Reply: {OK, the first job's
-- number (the others follow it)} or a refusal.
local due = nil
if tonumber(delay) > 0 then
  due = NOW + tonumber(delay)
elseif run_at ~= '' and tonumber(run_at) > NOW then
  due = tonumber(run_at)
end
local attempts = attempts_max
if attempts == '' then
  attempts = nil
end
local fingerprint = ''
if ikey ~= '' then
  -- Each payload length-prefixed, so no two batches frame alike; built
  -- only for a key (it copies every payload).
  local framed = {}
  for i, payload in ipairs(payloads) do
    framed[i] = #payload .. ':' .. payload
  end
  fingerprint = 'enqueue\0' .. name .. '\0' .. delay .. '\0' .. run_at .. '\0'
    .. attempts_max .. '\0' .. priority .. '\0' .. ukey .. '\0' .. ukey_window .. '\0'
    .. ukey_states .. '\0' .. #payloads .. '\0' .. redis.sha1hex(table.concat(framed))
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
local refused = key_room(ikey, tonumber(ikey_ttl), tonumber(ikey_quota))
if refused then
  return refused
end
local first = enqueue_admitted(name, q, bytes, payloads, due, attempts, tonumber(priority), wake)
if ukey ~= '' then
  local ends = num(NOW + tonumber(ukey_window))
  call('HSET', qk('qu', name), ukey, first .. ':' .. ends .. ':' .. ukey_states)
  call('HSET', qk('qk', name), first, ukey)
end
remember(ikey, fingerprint, tonumber(ikey_ttl), {'j', first})
return {OK, tonumber(first)}
