-- function: tenant
-- heartbeat: ARGV[3] member, ARGV[4] ttl (ms), ARGV[5] '1' if ARGV[6] holds
-- new attributes, ARGV[7] the lease sequence number to attach to ('' for
-- none), ARGV[8] presence_per_lease_max, ARGV[9] the tenant's presence
-- quota (-1: off), ARGV[10] how long the key outlives the deadline (ms),
-- ARGV[11] '1' if new records are refused (the caller is draining).
-- Refreshes a visible record (an absolute reset) or creates one. Reply:
-- {OK, version, remaining}; CONFLICT when the member is present under
-- another live lease; the lease's state if it is not live; DRAINING for a
-- new record that is refused.
local member, ttl, lease = ARGV[3], tonumber(ARGV[4]), ARGV[7]
local keep = tonumber(ARGV[10])
if lease ~= '' then
  local state = lease_state(lease)
  if state ~= OK then
    return {state}
  end
end
local mk = R .. 'm:' .. member
local d = NOW + ttl
local m = visible_member(member, lease)
if m then
  if m[2] ~= lease then
    return {CONFLICT, tonumber(m[3])}
  end
  local z = cover(m[5], d, 3 * ttl, function()
    return {mk}
  end)
  if not z then
    return {ROOM}
  end
  local v = tonumber(m[3]) + 1
  call('HSET', mk, 'v', num(v), 'd', num(d), 'z', z)
  if ARGV[5] == '1' then
    call('HSET', mk, 'a', ARGV[6])
  end
  call('PEXPIREAT', mk, num(d + keep))
  index_at(MEMBERS, d, member, tonumber(m[4]))
  return {OK, v, ttl}
end
-- Missing, lapsed, or under a lease that is gone: a new record.
if ARGV[11] == '1' then
  return {DRAINING}
end
if call('EXISTS', mk) == 1 then
  local lapsed = tonumber(call('HGET', mk, 'd') or '0') <= NOW
  drop_member(member, lapsed and EXPIRED_ or CASCADED_)
end
reap(REAP_MAX)
local under = R .. 'lm:' .. lease
if lease ~= '' then
  local refused = parent_full(under, tonumber(ARGV[8]), PARENT_SCOPE.m)
  if refused then
    return refused
  end
end
local refused = full(MEMBERS, tonumber(ARGV[9]), TENANT_SCOPE.m)
if refused then
  return refused
end
local room, answer = rooms({{'m', d, 3 * ttl}})
if not room then
  return answer
end
local v = next_fence()
local attrs = ''
if ARGV[5] == '1' then
  attrs = ARGV[6]
end
call('HSET', mk, 'a', attrs, 'l', lease, 'v', num(v), 'd', num(d), 'z', room.m[2],
  'rv', room.m[1])
call('PEXPIREAT', mk, num(d + keep))
index_at(MEMBERS, d, member)
call('ZADD', MEMBER_KEYS, 0, member)
if lease ~= '' then
  call('SADD', under, member)
end
return {OK, v, ttl}
