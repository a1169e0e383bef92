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
return DECLARED.refresh(kind, lease, name, r, ttl, keep, nil)
