-- function: tenant
-- arguments: kind, lease, name, ttl, keep
-- reply: version uint, remaining millis
-- renew_record: renews the visible record `name` of kind `kind` under
-- lease `lease` for `ttl` ms (an absolute reset), keeping its attributes;
-- `keep` how long the key outlives the deadline (ms). Reply: {OK,
-- version, remaining}, NOT_FOUND (also when the lease is not live) or
-- EXPIRED.
ttl, keep = tonumber(ttl), tonumber(keep)
local r, why = DECLARED.visible(kind, lease, name)
if not r then
  return {why}
end
local key = DECLARED.key(kind, lease, name)
local d = NOW + ttl
local z = cover(r[4], d, 3 * ttl, function()
  return {key}
end)
if not z then
  return {ROOM}
end
local v = tonumber(r[2]) + 1
call('HSET', key, 'v', num(v), 'd', num(d), 'z', z)
call('PEXPIREAT', key, num(d + keep))
index_at(DECLARED.index(kind), d, DECLARED.id(kind, lease, name), tonumber(r[3]))
return {OK, v, ttl}
