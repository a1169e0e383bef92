-- function: read
-- usage: what the tenant holds against its quotas, counted as its
-- creations count it (`full`: live records only). Reply: {OK, leases,
-- listings, presence records, pending attempts, attempt records,
-- idempotency records, locks, streams, queues, schedules}: the order of
-- `Collection::ALL`, tombstones left out (src/redis/usage.rs).
return {OK, live(LEASES), live(LISTINGS), live(MEMBERS), live(ATTEMPTS), live(REPLAY),
  live(IDEM), live(LOCKS), live(STREAMS), live(QUEUES), live(SCHEDULES)}
