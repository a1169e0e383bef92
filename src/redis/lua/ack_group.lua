-- function: tenant
-- ack_group: ARGV[3] stream, ARGV[4] group, ARGV[5...] offsets. Removes
-- each from the group's pending list, pending or dead. Reply: {OK, how
-- many the list held}.
local name, group = ARGV[3], ARGV[4]
local s = visible_group(name, group)
if not s then
  return {NOT_FOUND}
end
local gp, go, gi = group_keys(name, group)
local acked = 0
for i = 5, #ARGV do
  local m = group_member(tonumber(ARGV[i]))
  if call('HDEL', gp, m) == 1 then
    call('ZREM', go, m)
    call('ZREM', gi, m)
    acked = acked + 1
  end
end
return {OK, acked}
