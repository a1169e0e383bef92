-- function: tenant, replicated
-- arguments: tombstone_ttl
-- revoke_tenant: `tombstone_ttl` in ms. Everything the tenant holds
-- becomes invisible at once: a new epoch starts, with empty keys; the old
-- epoch's keys are buried a few at a time by later calls (`bury`), and
-- by the sweeper, which the tenant is now due for; burial gives the
-- records' room under the store-wide ceilings back. Its leases read as
-- REVOKED for tombstone_ttl (every fence issued before this call is below
-- the one it draws). Reply: {OK}.
local below = next_fence()
-- When the epoch ended, and when its tombstones end: its burial announces
-- a lease whose deadline had passed by then as expired, the others as
-- revoked, each leaving a tombstone until then.
call('HSET', R .. 'at', 'at', num(NOW), 'tu', num(NOW + tonumber(tombstone_ttl)))
local epoch = tonumber(call('HGET', KEYS[1], 'e') or '0')
call('RPUSH', GRAVES, R)
call('HSET', KEYS[1], 'e', num(epoch + 1), 'rv', num(below),
  'ru', num(NOW + tonumber(tombstone_ttl)))
due(NOW)
return {OK}
