-- function: read
-- arguments: after, limit
-- reply: more uint, last text; each: key text, lease uint, attrs attrs, version uint, remaining millis
-- list_listings: `after` the key to resume after ('' from the start),
-- `limit` how many keys to scan. Reply: `page`'s, each visible listing as
-- key, lease sequence number, attributes, version, ms left (the lease's).
return page(LISTINGS, after, tonumber(limit), function(key)
  local p = visible_listing(key)
  if p then
    return {tonumber(p[1]), p[2], tonumber(p[3]), tonumber(p[5]) - NOW}
  end
  return nil
end)
