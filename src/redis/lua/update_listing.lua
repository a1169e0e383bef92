-- function: tenant
-- update_listing: ARGV[3] key, ARGV[4] expected version, ARGV[5] attributes.
-- Reply: {OK, new version}.
local key = ARGV[3]
local p = visible_listing(key)
if not p then
  return {NOT_FOUND}
end
local v = tonumber(p[3])
if v ~= tonumber(ARGV[4]) then
  return {CONFLICT, v}
end
v = v + 1
call('HSET', R .. 'p:' .. key, 'a', ARGV[5], 'v', num(v))
return {OK, v}
