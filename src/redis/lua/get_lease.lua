-- function: read
-- get_lease: ARGV[3] sequence number.
-- Reply: {OK, holder, version, remaining}.
local state, l = lease_state(ARGV[3], 'h', 'v', 'd')
if state ~= OK then
  return {state}
end
return {OK, l[1], tonumber(l[2]), tonumber(l[3]) - NOW}
