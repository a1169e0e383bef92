-- function: tenant
-- arguments: name
-- reply: ready uint, delayed uint, claimed uint, dead uint, bytes uint
-- queue_info: settles what is due first. Reply: {OK,
-- ready, delayed, claimed, dead, payload bytes}.
local q = queue_now(name)
if not q then
  return {NOT_FOUND}
end
local out = {OK}
for _, part in ipairs(QUEUE_STATES) do
  out[#out + 1] = call('ZCARD', qk(part, name))
end
out[#out + 1] = q[8]
return out
