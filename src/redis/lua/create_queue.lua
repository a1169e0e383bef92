-- function: tenant
-- create_queue: ARGV[3] name, ARGV[4] jobs_max, ARGV[5] bytes_max,
-- ARGV[6] dead_letters_max, ARGV[7] visibility (ms), ARGV[8]
-- attempts_max, ARGV[9] and ARGV[10] the backoff's base and max (ms),
-- ARGV[11] the jitter seed ('' for none), ARGV[12] the tenant's queue
-- quota (-1: off). Reply: {OK} (also when the same queue is there
-- already: a retried create), {EXISTS} when the name is taken with other
-- settings, or a refusal.
local name = ARGV[3]
local settings = table.concat({unpack(ARGV, 4, 11)}, '/')
local qkey = K .. 'q:' .. name
local held = call('HGET', qkey, 'c')
if held then
  if held == settings then
    return {OK}
  end
  return {EXISTS}
end
local refused = full(QUEUES, tonumber(ARGV[12]), Q_TENANT)
if refused then
  return refused
end
local room, answer = rooms({{'q', ARGV[4] .. '/' .. ARGV[5], qkey}})
if not room then
  return answer
end
call('HSET', qkey, 'c', settings, 'jm', ARGV[4], 'bm', ARGV[5], 'dm', ARGV[6],
  'vis', ARGV[7], 'am', ARGV[8], 'bb', ARGV[9], 'bx', ARGV[10], 'nb', '0', 'rv', room.q[1])
call('ZADD', QUEUES, '+inf', name)
return {OK}
