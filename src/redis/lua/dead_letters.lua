-- function: tenant
-- arguments: name, from, most
-- reply: each: seq uint, attempts uint, reason text, payload bytes
-- dead_letters: `name` the queue, `from` the lowest job number to list,
-- `most` the most to list. Reply: {OK, then per dead letter, by number: its
-- number, attempts, reason, payload}.
if not queue_now(name) then
  return {NOT_FOUND}
end
local out = {OK}
local dead = call('ZRANGEBYSCORE', qk('qx', name), from, '+inf', 'LIMIT', 0, most)
for _, seq in ipairs(dead) do
  out[#out + 1] = tonumber(seq)
  out[#out + 1] = tonumber(call('HGET', qk('qa', name), seq))
  out[#out + 1] = call('HGET', qk('qy', name), seq)
  out[#out + 1] = call('HGET', qk('qp', name), seq)
end
return out
