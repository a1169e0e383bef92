-- function: tenant
-- arguments: name, worker, visibility, most
-- reply: visibility millis, next int; each: seq uint, token uint, attempt uint, payload bytes
-- claim: `name` the queue, `visibility` in ms ('' for the queue's),
-- `most` the most jobs. Settles what is due, then claims
-- ready jobs by priority, oldest first within one. Reply: {OK, visibility (ms), ms until something
-- changes by itself (-1: nothing), then per job: its number, the claim's
-- token, the attempt, the payload}.
local q = queue_now(name)
if not q then
  return {NOT_FOUND}
end
local vis = q[4]
if visibility ~= '' then
  vis = tonumber(visibility)
end
local lapses = NOW + vis
local out = {OK, vis, 0}
for _, seq in ipairs(call('ZRANGE', qk('qr', name), 0, tonumber(most) - 1)) do
  call('ZREM', qk('qr', name), seq)
  call('ZADD', qk('qc', name), num(lapses), seq)
  local token = num(next_fence())
  call('HSET', qk('qt', name), seq, token)
  call('HSET', qk('qw', name), seq, worker)
  local attempt = call('HINCRBY', qk('qa', name), seq, 1)
  out[#out + 1] = tonumber(seq)
  out[#out + 1] = tonumber(token)
  out[#out + 1] = attempt
  out[#out + 1] = call('HGET', qk('qp', name), seq)
end
out[3] = queue_next(name)
return out
