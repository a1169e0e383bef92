-- function: tenant
-- arguments: name, entries_max, bytes_max, age_max, when_full, lease, quota, per_lease_max
-- create_stream: `age_max` in ms ('' for none); `when_full` 'r' (refuse
-- when full) or 't' (trim the oldest); `lease` the lease sequence number
-- to attach to ('' for none); `quota` the tenant's stream quota (-1:
-- off); `per_lease_max` streams_per_lease_max. Reply: {OK, 1} when created, {OK, 0} when the
-- same stream is there already (a retried create), {EXISTS} when the name
-- is taken with other settings, or a refusal.
local settings = table.concat({entries_max, bytes_max, age_max, when_full, lease}, '/')
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
  local refused = parent_full(R .. 'ls:' .. lease, tonumber(per_lease_max), PARENT_SCOPE.s)
  if refused then
    return refused
  end
end
local refused = full(STREAMS, tonumber(quota), TENANT_SCOPE.s)
if refused then
  return refused
end
local room, answer = rooms({{'s', bytes_max .. '/' .. entries_max, sk}})
if not room then
  return answer
end
call('HSET', sk, 'c', settings, 'em', entries_max, 'bm', bytes_max, 'ag', age_max,
  'wf', when_full, 'l', lease, 'n', '0', 'b', '0', 'rv', room.s[1])
call('ZADD', STREAMS, '+inf', name)
if lease ~= '' then
  call('SADD', R .. 'ls:' .. lease, name)
end
return {OK, 1}
