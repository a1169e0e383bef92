-- function: tenant
-- arguments: name, group
-- delete_group: `name` the stream. Reply: {OK}, or {NOT_FOUND}
-- if the stream has no such group.
if not visible_stream(name) or not drop_group(name, group) then
  return {NOT_FOUND}
end
return {OK}
