-- function: tenant
-- arguments: name, group, ...offsets
-- reply: acked uint
-- ack_group: `name` the stream, `group` the group, then `offsets`. Removes
-- each from the group's pending list, pending or dead. Reply: {OK, how
-- many the list held}.
local s = visible_group(name, group)
if not s then
  return {NOT_FOUND}
end
local gp, go, gi = group_keys(name, group)
local acked = 0
for _, offset in ipairs(offsets) do
  local m = group_member(tonumber(offset))
  if call('HDEL', gp, m) == 1 then
    call('ZREM', go, m)
    call('ZREM', gi, m)
    acked = acked + 1
  end
end
return {OK, acked}
