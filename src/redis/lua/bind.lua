-- function: tenant, replicated
-- arguments: seq, secret, addr
-- reply: version uint
-- bind_endpoint: attempt `seq` presented with `secret` (hex), observed at
-- `addr`. Pending -> Bound, once; the same address again returns the
-- binding; another is CONFLICT. Reply: {OK, version}.
local code, a = attempt(seq, secret)
if code ~= OK then
  return {code}
end
if a[3] == 'b' then
  if a[4] == addr then
    return {OK, tonumber(a[5])}
  end
  return {CONFLICT, tonumber(a[5]), CONFLICTED.BOUND_ELSEWHERE}
end
local v = tonumber(a[5]) + 1
call('HSET', R .. 'a:' .. seq, 'st', 'b', 'ad', addr, 'v', num(v))
return {OK, v}
