-- function: tenant
-- observe_endpoint: ARGV[3] lease sequence number, ARGV[4] the address,
-- ARGV[5] endpoints_per_lease_max. Records the address as seen now; past
-- the cap the least recently seen one is replaced. Reply: {OK}.
local seq = ARGV[3]
local state = lease_state(seq)
if state ~= OK then
  return {state}
end
local seen = R .. 'le:' .. seq
call('ZADD', seen, num(NOW), ARGV[4])
local over = call('ZCARD', seen) - tonumber(ARGV[5])
if over > 0 then
  call('ZPOPMIN', seen, over)
end
return {OK}
