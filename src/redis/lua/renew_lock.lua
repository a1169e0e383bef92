-- function: tenant, replicated
-- arguments: name, fence, ttl, keep
-- reply: version uint, remaining millis
-- renew_lock: `ttl` in ms; `keep` how long the key outlives the deadline
-- (ms). Reply: {OK, version, remaining};
-- EXPIRED once it lapsed (also when another owner took it since),
-- NOT_FOUND after a release or once its lease is gone. (A fence from
-- before this incarnation is answered by the engine before the call.)
fence, ttl = tonumber(fence), tonumber(ttl)
local k = R .. 'k:' .. name
local l = call('HMGET', k, 'f', 'v', 'd', 'l', 'z')
if not l[1] then
  return {NOT_FOUND}
end
if l[4] ~= '' and lease_state(l[4]) ~= OK then
  return {NOT_FOUND}
end
if tonumber(l[1]) ~= fence or tonumber(l[3]) <= NOW then
  return {EXPIRED}
end
local v = tonumber(l[2]) + 1
local d = NOW + ttl
local z = cover(l[5], d, 3 * ttl, function()
  return {k}
end)
if not z then
  return {ROOM}
end
call('HSET', k, 'v', num(v), 'd', num(d), 'z', z)
call('PEXPIREAT', k, num(d + tonumber(keep)))
index_at(LOCKS, d, name, tonumber(l[3]))
return {OK, v, ttl}
