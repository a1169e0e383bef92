-- function: frees
-- arguments: kind, lease, name
-- remove_record: removes the visible record `name` of kind `kind` under
-- lease `lease` (released). Reply: {OK}, NOT_FOUND (also when the lease
-- is not live) or EXPIRED.
local r, why = DECLARED.visible(kind, lease, name)
if not r then
  return {why}
end
DECLARED.drop(kind, lease, name, RELEASED_)
return {OK}
