-- function: tenant
-- arguments: name
-- reply: purged uint
-- purge_dead: removes every dead letter. Reply: {OK, how
-- many}.
if not queue_now(name) then
  return {NOT_FOUND}
end
local dead = call('ZRANGE', qk('qx', name), 0, -1)
for _, seq in ipairs(dead) do
  remove_job(name, seq)
end
return {OK, #dead}
