-- function: tenant
-- arguments: seq, address, per_lease_max
-- observe_endpoint: `seq` the lease's sequence number; `per_lease_max`
-- endpoints_per_lease_max. Records the address as seen now; past the cap
-- the least recently seen one is replaced. Reply: {OK}.
local state = lease_state(seq)
if state ~= OK then
  return {state}
end
local seen = R .. 'le:' .. seq
call('ZADD', seen, num(NOW), address)
local over = call('ZCARD', seen) - tonumber(per_lease_max)
if over > 0 then
  call('ZPOPMIN', seen, over)
end
return {OK}
