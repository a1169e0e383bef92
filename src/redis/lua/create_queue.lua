-- function: tenant
-- arguments: name, jobs_max, bytes_max, dead_max, visibility, attempts_max, backoff_base, backoff_max, jitter_seed, quota
-- create_queue: `dead_max` dead_letters_max; `visibility` in ms;
-- `backoff_base` and `backoff_max` the backoff's (ms); `jitter_seed` ''
-- for none; `quota` the tenant's queue quota (-1: off). Reply: {OK} (also when the same queue is there
-- already: a retried create), {EXISTS} when the name is taken with other
-- settings, or a refusal.
local settings = table.concat({jobs_max, bytes_max, dead_max, visibility, attempts_max,
  backoff_base, backoff_max, jitter_seed}, '/')
local qkey = K .. 'q:' .. name
local held = call('HGET', qkey, 'c')
if held then
  if held == settings then
    return {OK}
  end
  return {EXISTS}
end
local refused = full(QUEUES, tonumber(quota), TENANT_SCOPE.q)
if refused then
  return refused
end
local room, answer = rooms({{'q', jobs_max .. '/' .. bytes_max, qkey}})
if not room then
  return answer
end
call('HSET', qkey, 'c', settings, 'jm', jobs_max, 'bm', bytes_max, 'dm', dead_max,
  'vis', visibility, 'am', attempts_max, 'bb', backoff_base, 'bx', backoff_max, 'nb', '0', 'rv', room.q[1])
call('ZADD', QUEUES, '+inf', name)
return {OK}
