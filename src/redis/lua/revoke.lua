-- revoke: ARGV[3] sequence number, ARGV[4] tombstone_ttl (ms). Removes the
-- lease's locks in the same step and leaves a tombstone, so the lease reads
-- Revoked until the tombstone's key expires. Reply: {OK} or a code.
local seq = ARGV[3]
local state = lease_state(seq)
if state == REVOKED then
  return {OK}
elseif state ~= OK then
  return {state}
end
leave_index(LEASES, seq, E_LEASE, REVOKED_)
detach(seq, REVOKED_)
local k = R .. 'l:' .. seq
local until_ms = NOW + tonumber(ARGV[4])
call('HSET', k, 'x', '1', 'd', num(until_ms))
call('PEXPIREAT', k, num(until_ms))
-- The tenant is not forgotten while a tombstone of its answers Revoked.
if until_ms > tonumber(call('HGET', KEYS[1], 'tu') or '0') then
  call('HSET', KEYS[1], 'tu', num(until_ms))
end
return {OK}
