-- function: tenant
-- delete_group: ARGV[3] stream, ARGV[4] group. Reply: {OK}, or {NOT_FOUND}
-- if the stream has no such group.
if not visible_stream(ARGV[3]) or not drop_group(ARGV[3], ARGV[4]) then
  return {NOT_FOUND}
end
return {OK}
