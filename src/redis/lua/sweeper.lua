-- function: meta
-- arguments: holder, ttl
-- sweeper: the sweeper lease, KEYS[1] "{<ns>}:sweeper". `holder` the
-- asking handle's origin, `ttl` the lease's length (ms). Takes the lease
-- if it is free, renews it if the asker holds it. Reply: 1 if the asker
-- holds it now, else 0.
local held = call('GET', KEYS[1])
if not held then
  call('SET', KEYS[1], holder, 'PX', ttl)
  return 1
elseif held == holder then
  call('PEXPIRE', KEYS[1], ttl)
  return 1
end
return 0
