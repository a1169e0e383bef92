-- function: read
-- arguments: name
-- reply: holder text, fence uint, version uint, remaining millis
-- get_lock: reply {OK, holder, fence, version, remaining}.
local l = call('HMGET', R .. 'k:' .. name, 'h', 'f', 'v', 'd', 'l')
if not l[1] or tonumber(l[4]) <= NOW or (l[5] ~= '' and lease_state(l[5]) ~= OK) then
  return {NOT_FOUND}
end
return {OK, l[1], tonumber(l[2]), tonumber(l[3]), tonumber(l[4]) - NOW}
