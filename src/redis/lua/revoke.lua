-- function: frees, replicated
-- arguments: seq, tombstone_ms
-- revoke: lease `seq`, its tombstone kept `tombstone_ms`. Removes the
-- lease's locks in the same step and leaves a tombstone, so the lease reads
-- Revoked until the tombstone's key expires; the tombstone's end is
-- announced by the reaping that finds it in TOMBS. Reply: {OK} or a code.
local state = lease_state(seq)
if state == REVOKED then
  return {OK}
elseif state ~= OK then
  return {state}
end
leave_index(LEASES, seq, E_LEASES, REVOKED_)
detach(seq, REVOKED_)
local k = R .. 'l:' .. seq
local until_ms = NOW + tonumber(tombstone_ms)
call('HSET', k, 'x', '1', 'd', num(until_ms))
call('PEXPIREAT', k, num(until_ms))
-- The tombstone's end is announced (and the tenant is not forgotten
-- before it).
call('ZADD', TOMBS, num(until_ms), seq)
due(until_ms)
return {OK}
