-- function: tenant, replicated
-- bind_endpoint: ARGV[3] attempt sequence number, ARGV[4] secret (hex),
-- ARGV[5] the observed address. Pending -> Bound, once; the same address
-- again returns the binding; another is CONFLICT. Reply: {OK, version}.
local seq, addr = ARGV[3], ARGV[5]
local code, a = attempt(seq, ARGV[4])
if code ~= OK then
  return {code}
end
if a[3] == 'b' then
  if a[4] == addr then
    return {OK, tonumber(a[5])}
  end
  return {CONFLICT, tonumber(a[5])}
end
local v = tonumber(a[5]) + 1
call('HSET', R .. 'a:' .. seq, 'st', 'b', 'ad', addr, 'v', num(v))
return {OK, v}
