-- function: tenant
-- arguments: name
-- delete_queue: removes the queue with every job in it
-- (its workers wake, from the removal event). Reply: {OK} or {NOT_FOUND}.
if not queue_of(name) then
  return {NOT_FOUND}
end
drop_queue(name, RELEASED_)
return {OK}
