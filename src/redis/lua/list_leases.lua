-- function: read
-- arguments: after, limit
-- reply: more uint, last text; each: _member text, seq uint, holder text, version uint, remaining millis
-- list_leases: `after` the member to resume after ('' from the start),
-- `limit` how many to scan. Reply: `page`'s over the tenant's leases in id
-- order, each visible lease as its member, then sequence number, holder,
-- version, ms left.
return page(LEASE_IDS, after, tonumber(limit), function(member)
  local seq = num(tonumber(member))
  local state, l = lease_state(seq, 'h', 'v', 'd')
  if state == OK then
    return {tonumber(seq), l[1], tonumber(l[2]), tonumber(l[3]) - NOW}
  end
  return nil
end)
