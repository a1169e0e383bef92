-- function: read
-- arguments: after, limit
-- reply: more uint, last text; each: member text, attrs attrs, lease text, version uint, remaining millis
-- list_presence: `after` the member to resume after ('' from the start),
-- `limit` how many members to scan. Reply: `page`'s, each visible record as
-- member, attributes, lease sequence number ('' for none), version,
-- remaining.
return page(MEMBER_KEYS, after, tonumber(limit), function(member)
  local m = visible_member(member)
  if m then
    return {m[1], m[2], tonumber(m[3]), tonumber(m[4]) - NOW}
  end
  return nil
end)
