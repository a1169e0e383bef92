-- get_lease: ARGV[3] sequence number.
-- Reply: {OK, holder, version, remaining}.
local seq = ARGV[3]
local state = lease_state(seq)
if state ~= OK then
  return {state}
end
local l = redis.call('HMGET', R .. 'l:' .. seq, 'h', 'v', 'd')
return {OK, l[1], tonumber(l[2]), tonumber(l[3]) - NOW}
