-- function: read
-- arguments: name, group, from, most
-- reply: each: offset uint, deliveries uint, idle millis, dead int, member text
-- pending: `name` the stream, `from` the offset to list from, `most` the
-- most entries. Writes nothing. Reply: {OK, (offset,
-- deliveries, idle ms, dead 0|1, member) per entry, in offset order}.
local s = visible_group(name, group)
if not s then
  return {NOT_FOUND}
end
local gp = group_key('gp', name, group)
local out = {OK}
local listed = call('ZRANGEBYSCORE', group_key('go', name, group), from, '+inf',
  'LIMIT', 0, tonumber(most))
for _, m in ipairs(listed) do
  local d, at, dead, who = pending_entry(gp, m)
  out[#out + 1] = tonumber(m)
  out[#out + 1] = d
  out[#out + 1] = math.max(0, NOW - at)
  out[#out + 1] = dead
  out[#out + 1] = who
end
return out
