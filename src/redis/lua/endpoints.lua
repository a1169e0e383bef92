-- function: read
-- endpoints: ARGV[3] lease sequence number. Reply: {OK, then address and
-- age (ms) of each endpoint seen, most recent first}.
local seq = ARGV[3]
local state = lease_state(seq)
if state ~= OK then
  return {state}
end
local out = {OK}
local seen = call('ZREVRANGE', R .. 'le:' .. seq, 0, -1, 'WITHSCORES')
for i = 1, #seen, 2 do
  table.insert(out, seen[i])
  table.insert(out, NOW - tonumber(seen[i + 1]))
end
return out
