-- function: read
-- arguments: name, group
-- reply: next uint, held uint, live uint, settings text
-- group_info: `name` the stream. Writes nothing. Reply: {OK,
-- the offset its next read starts at, entries on its pending list, live
-- ones among them, its settings}.
local s, settings = visible_group(name, group)
if not s then
  return {NOT_FOUND}
end
return {OK, tonumber(call('HGET', K .. 'sgn:' .. name, group)),
  call('HLEN', group_key('gp', name, group)), call('ZCARD', group_key('gi', name, group)),
  settings}
