-- function: read
-- list_leases: ARGV[3] the member to resume after ('' from the start),
-- ARGV[4] how many to scan. Reply: `page`'s over the tenant's leases in id
-- order, each visible lease as its member, then sequence number, holder,
-- version, ms left.
return page(LEASE_IDS, ARGV[3], tonumber(ARGV[4]), function(member)
  local seq = num(tonumber(member))
  local state, l = lease_state(seq, 'h', 'v', 'd')
  if state == OK then
    return {tonumber(seq), l[1], tonumber(l[2]), tonumber(l[3]) - NOW}
  end
  return nil
end)
