-- function: read
-- arguments: key
-- reply: lease uint, attrs attrs, version uint, remaining millis
-- get_listing: listing `key`. Reply: {OK, lease sequence number,
-- attributes, version, ms left (the lease's)}.
local p = visible_listing(key)
if not p then
  return {NOT_FOUND}
end
return {OK, tonumber(p[1]), p[2], tonumber(p[3]), tonumber(p[5]) - NOW}
