-- function: frees
-- arguments: key, expected, revoking
-- unpublish / revoke_listing: listing `key`; `expected` the expected
-- version ('' for any); `revoking` '1' for revoke_listing (a listing that
-- is not visible is then OK). Removes the listing and its pending and
-- bound attempts.
local p = visible_listing(key)
if not p then
  if revoking == '1' then
    return {OK}
  end
  return {NOT_FOUND}
end
if expected ~= '' and tonumber(expected) ~= tonumber(p[3]) then
  return {CONFLICT, tonumber(p[3]), CONFLICTED.VERSION}
end
drop_listing(key, revoking == '1' and REVOKED_ or RELEASED_)
return {OK}
