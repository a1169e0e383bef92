-- function: tenant
-- arguments: kind, lease, name, ttl, has_attrs, attrs, per_lease_max, quota, keep, draining
-- reply: version uint, remaining millis
-- put_record: the record `name` of the declared kind of letter `kind`
-- under lease `lease` (its sequence number), live for `ttl` ms (an
-- absolute reset); `attrs` replace the stored ones if `has_attrs` is '1';
-- `per_lease_max` the kind's cap per lease; `quota` its tenant quota (-1:
-- off); `keep` how long the key outlives the deadline (ms); `draining`
-- '1' if new records are refused. Renews a visible record or creates one.
-- Reply: {OK, version, remaining}; the lease's state if it is not live;
-- DRAINING for a new record that is refused.
ttl, keep = tonumber(ttl), tonumber(keep)
local state = lease_state(lease)
if state ~= OK then
  return {state}
end
local r = DECLARED.visible(kind, lease, name, lease)
if r then
  return DECLARED.refresh(kind, lease, name, r, ttl, keep, has_attrs == '1' and attrs or nil)
end
local key = DECLARED.key(kind, lease, name)
local d = NOW + ttl
-- Missing or lapsed: a new record.
if draining == '1' then
  return {DRAINING}
end
if call('EXISTS', key) == 1 then
  DECLARED.drop(kind, lease, name, EXPIRED_)
end
reap(REAP_MAX)
local under = DECLARED.children(kind, lease)
local refused = parent_full(under, tonumber(per_lease_max), PARENT_SCOPE[kind], 'ZCARD')
if refused then
  return refused
end
refused = full(DECLARED.index(kind), tonumber(quota), TENANT_SCOPE[kind])
if refused then
  return refused
end
local room, answer = rooms({{kind, d, 3 * ttl}})
if not room then
  return answer
end
local v = next_fence()
if has_attrs ~= '1' then
  attrs = ''
end
call('HSET', key, 'a', attrs, 'v', num(v), 'd', num(d), 'z', room[kind][2], 'rv', room[kind][1])
call('PEXPIREAT', key, num(d + keep))
index_at(DECLARED.index(kind), d, DECLARED.id(kind, lease, name))
call('ZADD', under, num(v), name)
call('SADD', R .. 'rk', kind)
return {OK, v, ttl}
