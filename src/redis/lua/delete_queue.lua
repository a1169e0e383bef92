-- function: tenant
-- delete_queue: ARGV[3] name. Removes the queue with every job in it
-- (its workers wake, from the removal event). Reply: {OK} or {NOT_FOUND}.
local name = ARGV[3]
if not queue_of(name) then
  return {NOT_FOUND}
end
drop_queue(name, RELEASED_)
return {OK}
