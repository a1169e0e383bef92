-- function: meta
-- sweeper: the sweeper lease, KEYS[1] "{<ns>}:sweeper". ARGV[1] the
-- asking handle's origin, ARGV[2] the lease's length (ms). Takes the
-- lease if it is free, renews it if the asker holds it. Reply: 1 if the
-- asker holds it now, else 0.
local holder = call('GET', KEYS[1])
if not holder then
  call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
elseif holder == ARGV[1] then
  call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
