-- function: tenant
-- arguments: name, spec, interval, queue, payload, quota
-- schedule: `interval` in ms; `quota` the tenant's schedule quota (-1:
-- off).
-- A schedule is `h:<name>` under K (a hash: `sp` spec, `iv` interval,
-- `nx` the next grid point (ms, the server's clock), `q` queue, `p`
-- payload, `f` fires so far, `rv` its reservation); SCHEDULES indexes
-- them by name. Scheduling a name again with the same interval, queue and
-- payload changes nothing (a retried call keeps the grid); otherwise it
-- replaces it (its grid starts now). Reply: {OK}, {NOT_FOUND} for a
-- missing queue, or a refusal.
interval = tonumber(interval)
if not queue_of(queue) then
  return {NOT_FOUND}
end
local hkey = K .. 'h:' .. name
local held = call('HMGET', hkey, 'rv', 'iv', 'q', 'p')
local token = held[1]
if token and tonumber(held[2]) == interval and held[3] == queue and held[4] == payload then
  return {OK}
end
if not token then
  local refused = full(SCHEDULES, tonumber(quota), TENANT_SCOPE.h)
  if refused then
    return refused
  end
  local room, answer = rooms({{'h', '', hkey}})
  if not room then
    return answer
  end
  token = room.h[1]
end
call('HSET', hkey, 'sp', spec, 'iv', num(interval), 'nx', num(NOW + interval),
  'q', queue, 'p', payload, 'f', '0', 'rv', token)
call('ZADD', SCHEDULES, '+inf', name)
return {OK}
