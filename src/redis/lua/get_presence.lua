-- function: read
-- get_presence: ARGV[3] member. Reply: {OK, attributes, lease sequence
-- number ('' for none), version, remaining}.
local m = visible_member(ARGV[3])
if not m then
  return {NOT_FOUND}
end
return {OK, m[1], m[2], tonumber(m[3]), tonumber(m[4]) - NOW}
