-- function: read
-- arguments: seq
-- reply: listing text, client text, state text, address text, version uint, remaining millis
-- get_attempt: attempt `seq`. Writes nothing.
-- Reply: {OK, listing key, client, state ('p', 'b' or 'c'), address (''
-- while pending), version, ms left (before the attempt's deadline, or,
-- consumed, before its replay memory is forgotten)}.
local code, a = attempt(seq, nil)
if code == REPLAYED then
  local c = call('HMGET', R .. 'a:' .. seq, 'k', 'c', 'ad', 'v', 'f')
  return {OK, c[1], c[2], 'c', c[3], tonumber(c[4]), tonumber(c[5]) - NOW}
end
if code ~= OK then
  return {code}
end
return {OK, a[1], a[2], a[3], a[4] or '', tonumber(a[5]), tonumber(a[7]) - NOW}
