-- function: read
-- list_listings: ARGV[3] the key to resume after ('' from the start),
-- ARGV[4] how many keys to scan. Reply: `page`'s, each visible listing as
-- key, lease sequence number, attributes, version, ms left (the lease's).
return page(LISTINGS, ARGV[3], tonumber(ARGV[4]), function(key)
  local p = visible_listing(key)
  if p then
    return {tonumber(p[1]), p[2], tonumber(p[3]), tonumber(p[5]) - NOW}
  end
  return nil
end)
