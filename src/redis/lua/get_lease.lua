-- function: read
-- arguments: seq
-- reply: holder text, version uint, remaining millis
-- get_lease: lease `seq`. Reply: {OK, holder, version, remaining}.
local state, l = lease_state(seq, 'h', 'v', 'd')
if state ~= OK then
  return {state}
end
return {OK, l[1], tonumber(l[2]), tonumber(l[3]) - NOW}
