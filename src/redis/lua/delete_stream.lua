-- function: tenant
-- delete_stream: ARGV[3] name. Reply: {OK} or {NOT_FOUND}.
local name = ARGV[3]
if not visible_stream(name) then
  return {NOT_FOUND}
end
drop_stream(name, RELEASED_)
return {OK}
