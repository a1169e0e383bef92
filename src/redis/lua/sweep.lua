-- function: tenant
-- arguments: most
-- reply: next int
-- sweep: `most` the most entries to take from each index. Removes (and
-- announces) what is due, as a creation's reaping does, buries some of an
-- ended epoch (`bury`), and records the
-- tenant's next deadline for the sweeper. Reply: {OK, next deadline in
-- ms, or -1 when nothing of the tenant has a deadline}.
reap(tonumber(most))
local next_due = -1
for _, index in ipairs({LEASES, LOCKS, ATTEMPTS, MEMBERS, REPLAY, IDEM, TOMBS}) do
  local first = call('ZRANGE', index, 0, 0, 'WITHSCORES')
  if first[2] then
    local d = tonumber(first[2])
    if next_due < 0 or d < next_due then
      next_due = d
    end
  end
end
local records = DECLARED.due()
if records and (next_due < 0 or records < next_due) then
  next_due = records
end
-- An ended epoch not yet buried: due again at once.
if call('EXISTS', GRAVES) == 1 then
  next_due = NOW
end
if next_due < 0 then
  call('HDEL', KEYS[1], 'nd')
else
  call('HSET', KEYS[1], 'nd', num(next_due))
end
return {OK, next_due}
