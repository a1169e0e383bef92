-- function: frees
-- unpublish / revoke_listing: ARGV[3] key, ARGV[4] expected version ('' for
-- any), ARGV[5] '1' for revoke_listing (a listing that is not visible is
-- then OK). Removes the listing and its pending and bound attempts.
local key = ARGV[3]
local p = visible_listing(key)
if not p then
  if ARGV[5] == '1' then
    return {OK}
  end
  return {NOT_FOUND}
end
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= tonumber(p[3]) then
  return {CONFLICT, tonumber(p[3])}
end
drop_listing(key, ARGV[5] == '1' and REVOKED_ or RELEASED_)
return {OK}
