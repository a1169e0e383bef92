-- function: read
-- arguments: kind, lease, name
-- reply: attrs attrs, version uint, remaining millis
-- get_record: the visible record `name` of kind `kind` under lease
-- `lease`. Reply: {OK, attributes, version, remaining}, NOT_FOUND (also
-- when the lease is not live) or EXPIRED.
local r, why = DECLARED.visible(kind, lease, name)
if not r then
  return {why}
end
return {OK, r[1], tonumber(r[2]), tonumber(r[3]) - NOW}
