-- function: tenant
-- renew / renew_at: ARGV[3] sequence number, ARGV[4] ttl (ms), ARGV[5] the
-- expected version ('' for any), ARGV[6] how long the key outlives the
-- deadline (ms). Reply: {OK, version, remaining}.
local seq, ttl = ARGV[3], tonumber(ARGV[4])
local state, l = lease_state(seq, 'v', 'd', 'z')
if state ~= OK then
  return {state}
end
local k = R .. 'l:' .. seq
local v = tonumber(l[1])
if ARGV[5] ~= '' and tonumber(ARGV[5]) ~= v then
  return {CONFLICT, v}
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
call('PEXPIREAT', k, num(d + tonumber(ARGV[6])))
index_at(LEASES, d, seq, tonumber(l[2]))
return {OK, v, ttl}
