-- function: tenant
-- arguments: name
-- delete_stream: reply {OK} or {NOT_FOUND}.
if not visible_stream(name) then
  return {NOT_FOUND}
end
drop_stream(name, RELEASED_)
return {OK}
