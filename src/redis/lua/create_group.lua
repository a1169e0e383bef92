-- function: tenant
-- arguments: name, group, settings, start, consumers_max
-- create_group: `name` the stream, `settings` the group's (as `sg:` holds
-- them), `start` where it starts ('o' the first entry held, 'e' the
-- stream's next offset, or an offset), `consumers_max`
-- consumers_per_stream_max (named consumers and groups together). Reply:
-- {OK} (also when the same group is there already: a retried create),
-- {EXISTS} when the name is taken with other settings, {INVALID, START_PAST_THE_END} for a
-- start past the stream's end, or a refusal.
local s = visible_stream(name)
if not s then
  return {NOT_FOUND}
end
local groups = K .. 'sg:' .. name
local held = call('HGET', groups, group)
if held then
  if held == settings then
    return {OK}
  end
  return {EXISTS}
end
local readers = call('HLEN', K .. 'sc:' .. name) + call('HLEN', groups)
local cap = tonumber(consumers_max)
if readers >= cap then
  return {CAPACITY, S_CONSUMERS, cap, readers}
end
local n = tonumber(s[6])
local len = drop_aged(name, s)
local next
if start == 'o' then
  next = n - len
elseif start == 'e' then
  next = n
else
  next = tonumber(start)
  if next > n then
    return {INVALID, START_PAST_THE_END}
  end
end
call('HSET', groups, group, settings)
call('HSET', K .. 'sgn:' .. name, group, num(next))
return {OK}
