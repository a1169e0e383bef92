-- function: read
-- arguments: member
-- reply: attrs attrs, lease text, version uint, remaining millis
-- get_presence: a visible presence record. Reply: {OK, attributes, lease
-- sequence number ('' for none), version, remaining}.
local m = visible_member(member)
if not m then
  return {NOT_FOUND}
end
return {OK, m[1], m[2], tonumber(m[3]), tonumber(m[4]) - NOW}
