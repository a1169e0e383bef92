-- function: tenant
-- create_stream: ARGV[3] name, ARGV[4] entries_max, ARGV[5] bytes_max,
-- ARGV[6] age limit (ms, '' for none), ARGV[7] 'r' (refuse when full) or
-- 't' (trim the oldest), ARGV[8] the lease sequence number to attach to
-- ('' for none), ARGV[9] the tenant's stream quota (-1: off), ARGV[10]
-- streams_per_lease_max. Reply: {OK, 1} when created, {OK, 0} when the
-- same stream is there already (a retried create), {EXISTS} when the name
-- is taken with other settings, or a refusal.
local name, lease = ARGV[3], ARGV[8]
local settings = table.concat({ARGV[4], ARGV[5], ARGV[6], ARGV[7], lease}, '/')
reap(REAP_MAX)
local sk = K .. 's:' .. name
local cur = call('HMGET', sk, 'c', 'l')
if cur[1] then
  if cur[2] ~= '' and lease_state(cur[2]) ~= OK then
    -- Its lease is gone: the stream goes with it, and the name is free.
    drop_stream(name, CASCADED_)
  elseif cur[1] == settings then
    return {OK, 0}
  else
    return {EXISTS}
  end
end
if lease ~= '' then
  local state = lease_state(lease)
  if state ~= OK then
    return {state}
  end
  local refused = parent_full(R .. 'ls:' .. lease, tonumber(ARGV[10]), S_PARENT)
  if refused then
    return refused
  end
end
local refused = full(STREAMS, tonumber(ARGV[9]), S_TENANT)
if refused then
  return refused
end
local room, answer = rooms({{'s', ARGV[5] .. '/' .. ARGV[4], sk}})
if not room then
  return answer
end
call('HSET', sk, 'c', settings, 'em', ARGV[4], 'bm', ARGV[5], 'ag', ARGV[6],
  'wf', ARGV[7], 'l', lease, 'n', '0', 'b', '0', 'rv', room.s[1])
call('ZADD', STREAMS, '+inf', name)
if lease ~= '' then
  call('SADD', R .. 'ls:' .. lease, name)
end
return {OK, 1}
