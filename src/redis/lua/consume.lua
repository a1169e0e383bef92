-- consume: ARGV[3] attempt sequence number, ARGV[4] secret (hex). Bound ->
-- Consumed, exactly once; the attempt then stays as replay memory until its
-- deadline plus replay_grace. Reply: {OK, client, listing key, address}.
local seq = ARGV[3]
local code, a = attempt(seq, ARGV[4])
if code ~= OK then
  return {code}
end
if a[3] ~= 'b' then
  return {CONFLICT, tonumber(a[5])}
end
redis.call('HSET', R .. 'a:' .. seq, 'st', 'c', 'v', num(tonumber(a[5]) + 1))
redis.call('SREM', R .. 'pa:' .. a[1], seq)
leave_index(ATTEMPTS, seq, E_ATTEMPT, CONSUMED_)
return {OK, a[2], a[1], a[4]}
