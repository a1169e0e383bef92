-- function: meta
-- arguments: most
-- due_take: the due index's tenants due now (KEYS[1] "{<ns>}:due"), at
-- most `most`, with their scores. Reply: {tenant, score, ...}.
local clock = call('TIME')
local now = math.floor((tonumber(clock[1]) * 1000000 + tonumber(clock[2])) / 1000)
return call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now),
  'WITHSCORES', 'LIMIT', 0, tonumber(most))
