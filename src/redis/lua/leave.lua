-- function: frees
-- arguments: member
-- leave: removes a visible presence record.
if not visible_member(member) then
  return {NOT_FOUND}
end
drop_member(member, RELEASED_)
return {OK}
