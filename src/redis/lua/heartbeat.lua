-- function: tenant
-- arguments: member, ttl, has_attrs, attrs, lease, per_lease_max, quota, keep, draining
-- reply: version uint, remaining millis
-- heartbeat: `ttl` in ms; `attrs` replace the stored ones if `has_attrs`
-- is '1'; `lease` the sequence number of the lease to attach to ('' for
-- none); `per_lease_max` presence_per_lease_max; `quota` the tenant's
-- presence quota (-1: off); `keep` how long the key outlives the deadline
-- (ms); `draining` '1' if new records are refused (the caller drains).
-- Refreshes a visible record (an absolute reset) or creates one. Reply:
-- {OK, version, remaining}; CONFLICT when the member is present under
-- another live lease; the lease's state if it is not live; DRAINING for a
-- new record that is refused.
ttl, keep = tonumber(ttl), tonumber(keep)
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
    return {CONFLICT, tonumber(m[3]), CONFLICTED.OTHER_LEASE}
  end
  local z = cover(m[5], d, 3 * ttl, function()
    return {mk}
  end)
  if not z then
    return {ROOM}
  end
  local v = tonumber(m[3]) + 1
  call('HSET', mk, 'v', num(v), 'd', num(d), 'z', z)
  if has_attrs == '1' then
    call('HSET', mk, 'a', attrs)
  end
  call('PEXPIREAT', mk, num(d + keep))
  index_at(MEMBERS, d, member, tonumber(m[4]))
  return {OK, v, ttl}
end
-- Missing, lapsed, or under a lease that is gone: a new record.
if draining == '1' then
  return {DRAINING}
end
if call('EXISTS', mk) == 1 then
  local lapsed = tonumber(call('HGET', mk, 'd') or '0') <= NOW
  drop_member(member, lapsed and EXPIRED_ or CASCADED_)
end
reap(REAP_MAX)
local under = R .. 'lm:' .. lease
if lease ~= '' then
  local refused = parent_full(under, tonumber(per_lease_max), PARENT_SCOPE.m)
  if refused then
    return refused
  end
end
local refused = full(MEMBERS, tonumber(quota), TENANT_SCOPE.m)
if refused then
  return refused
end
local room, answer = rooms({{'m', d, 3 * ttl}})
if not room then
  return answer
end
local v = next_fence()
if has_attrs ~= '1' then
  attrs = ''
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
