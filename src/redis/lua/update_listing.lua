-- function: tenant
-- arguments: key, expected, attrs
-- reply: version uint
-- update_listing: listing `key`'s attributes replaced by `attrs` if it is
-- at version `expected`. Reply: {OK, new version}.
local p = visible_listing(key)
if not p then
  return {NOT_FOUND}
end
local v = tonumber(p[3])
if v ~= tonumber(expected) then
  return {CONFLICT, v, CONFLICTED.VERSION}
end
v = v + 1
call('HSET', R .. 'p:' .. key, 'a', attrs, 'v', num(v))
return {OK, v}
