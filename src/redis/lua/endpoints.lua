-- function: read
-- arguments: seq
-- reply: each: address text, age millis
-- endpoints: `seq` the lease's sequence number. Reply: {OK, then address
-- and age (ms) of each endpoint seen, most recent first}.
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
