-- function: read
-- arguments: ...kinds
-- usage: what the tenant holds against its quotas, counted as its
-- creations count it (`full`: live records only). `kinds`: the letters of
-- the declared kinds. Reply: {OK, leases, listings, presence records,
-- pending attempts, attempt records, idempotency records, locks, streams,
-- queues, schedules (the order of `Collection::ALL`, tombstones and the
-- declared kinds' records left out), then the records of each of
-- `kinds`} (src/redis/usage.rs).
local out = {OK, live(LEASES), live(LISTINGS), live(MEMBERS), live(ATTEMPTS), live(REPLAY),
  live(IDEM), live(LOCKS), live(STREAMS), live(QUEUES), live(SCHEDULES)}
for _, kind in ipairs(kinds) do
  out[#out + 1] = live(DECLARED.index(kind))
end
return out
