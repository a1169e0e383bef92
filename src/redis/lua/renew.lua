-- function: tenant
-- arguments: seq, ttl_ms, expected, keep_ms
-- reply: version uint, remaining millis
-- renew / renew_at: lease `seq` for `ttl_ms`; `expected` the expected
-- version ('' for any); `keep_ms` how long the key outlives the deadline.
-- Reply: {OK, version, remaining}.
local ttl = tonumber(ttl_ms)
local state, l = lease_state(seq, 'v', 'd', 'z')
if state ~= OK then
  return {state}
end
local k = R .. 'l:' .. seq
local v = tonumber(l[1])
if expected ~= '' and tonumber(expected) ~= v then
  return {CONFLICT, v, CONFLICTED.VERSION}
end
v = v + 1
local d = NOW + ttl
-- Past the lease's room: the lease's reservation and its listings' move
-- out together (a listing is counted as long as its lease).
local z = cover(l[3], d, 3 * ttl, function()
  local keys = {k}
  for _, key in ipairs(call('SMEMBERS', R .. 'lp:' .. seq)) do
    keys[#keys + 1] = R .. 'p:' .. key
  end
  return keys
end)
if not z then
  return {ROOM}
end
call('HSET', k, 'v', num(v), 'd', num(d), 'z', z)
call('PEXPIREAT', k, num(d + tonumber(keep_ms)))
index_at(LEASES, d, seq, tonumber(l[2]))
return {OK, v, ttl}
