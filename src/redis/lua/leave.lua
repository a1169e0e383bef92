-- function: frees
-- leave: ARGV[3] member. Removes a visible presence record.
if not visible_member(ARGV[3]) then
  return {NOT_FOUND}
end
drop_member(ARGV[3], RELEASED_)
return {OK}
