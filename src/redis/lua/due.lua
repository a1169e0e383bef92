-- function: meta
-- due: the store's due index, KEYS[1] "{<ns>}:due" (tenants by their
-- earliest deadline, in the meta key's slot). ARGV[1] says what to do:
--   'lower', ARGV[2] tenant, ARGV[3] deadline: lower the tenant's place
--     (or add it). Reply: 1.
--   'take', ARGV[2] most tenants: the tenants due now, with their scores.
--     Reply: {tenant, score, ...}.
--   'swept', ARGV[2] tenant, ARGV[3] the score the sweeper took it at,
--     ARGV[4] its next deadline (-1: none): the new place, unless a write
--     lowered it meanwhile (then the lower of the two stays). Reply: 1.
local op = ARGV[1]
if op == 'lower' then
  call('ZADD', KEYS[1], 'LT', ARGV[3], ARGV[2])
  return 1
elseif op == 'take' then
  local clock = call('TIME')
  local now = math.floor((tonumber(clock[1]) * 1000000 + tonumber(clock[2])) / 1000)
  return call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now),
    'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
elseif op == 'swept' then
  local tenant, taken, next_due = ARGV[2], ARGV[3], tonumber(ARGV[4])
  local current = call('ZSCORE', KEYS[1], tenant)
  if current and tonumber(current) ~= tonumber(taken) then
    if next_due >= 0 and next_due < tonumber(current) then
      call('ZADD', KEYS[1], ARGV[4], tenant)
    end
  elseif next_due < 0 then
    call('ZREM', KEYS[1], tenant)
  else
    call('ZADD', KEYS[1], ARGV[4], tenant)
  end
  return 1
end
return redis.error_reply('due: unknown operation')
