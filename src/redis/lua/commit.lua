-- function: tenant
-- arguments: name, consumer, offset, consumers_max
-- commit: `consumers_max` consumers_per_stream_max (named consumers and
-- groups together). Never
-- backwards. Reply: {OK}, {CONFLICT,
-- committed} for an offset below the committed one, {INVALID, PAST_THE_END} for one
-- past the end, or a refusal of a new consumer past the cap.
offset = tonumber(offset)
local s = visible_stream(name)
if not s then
  return {NOT_FOUND}
end
if offset > tonumber(s[6]) then
  return {INVALID, PAST_THE_END}
end
local consumers = K .. 'sc:' .. name
local committed = call('HGET', consumers, consumer)
if committed then
  if offset < tonumber(committed) then
    return {CONFLICT, tonumber(committed), CONFLICTED.COMMIT_BEHIND}
  end
else
  local held = call('HLEN', consumers) + call('HLEN', K .. 'sg:' .. name)
  local cap = tonumber(consumers_max)
  if held >= cap then
    return {CAPACITY, S_CONSUMERS, cap, held}
  end
end
call('HSET', consumers, consumer, num(offset))
return {OK}
