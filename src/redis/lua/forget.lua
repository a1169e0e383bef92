-- function: tenant
-- reply: idle int
-- forget: deletes the tenant's own keys if it holds nothing now (ADR
-- 0072): no record in any index of its epoch or incarnation, no ended
-- epoch left to bury, and no revocation whose leases still read Revoked
-- (a tenant revocation's `ru`, a revoked lease's tombstone in TOMBS). The
-- engine then takes the tenant off the store's register. Its next
-- creation starts it afresh, with fences floored by the server's clock
-- (`next_fence`) and removal numbers from 1 (a listener reads numbers
-- that start again as a counter that started again). Reply: {OK, 1} when
-- the keys are gone, {OK, 0} when it holds something.
if call('EXISTS', GRAVES) == 1 then
  return {OK, 0}
end
local indexes = {
  LEASES, LEASE_IDS, LOCKS, IDEM, LISTINGS, ATTEMPTS, REPLAY, MEMBERS, MEMBER_KEYS,
  STREAMS, QUEUES, SCHEDULES, TOMBS,
}
for _, index in ipairs(indexes) do
  if call('EXISTS', index) == 1 then
    return {OK, 0}
  end
end
if NOW < tonumber(call('HGET', KEYS[1], 'ru') or '0') then
  return {OK, 0}
end
call('DEL', KEYS[1], TAG .. 'ctr', TAG .. 'evs')
return {OK, 1}
