-- function: tenant
-- dead_letters: ARGV[3] queue, ARGV[4] the lowest job number to list,
-- ARGV[5] most to list. Reply: {OK, then per dead letter, by number: its
-- number, attempts, reason, payload}.
local name = ARGV[3]
if not queue_now(name) then
  return {NOT_FOUND}
end
local out = {OK}
local dead = call('ZRANGEBYSCORE', qk('qx', name), ARGV[4], '+inf', 'LIMIT', 0, ARGV[5])
for _, seq in ipairs(dead) do
  out[#out + 1] = tonumber(seq)
  out[#out + 1] = tonumber(call('HGET', qk('qa', name), seq))
  out[#out + 1] = call('HGET', qk('qy', name), seq)
  out[#out + 1] = call('HGET', qk('qp', name), seq)
end
return out
