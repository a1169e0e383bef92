-- function: tenant
-- arguments: name, group, member, min_idle, most
-- claim_idle: `name` the stream, `min_idle` in ms, `most` the most
-- entries to look at. Takes the entries
-- idle that long, the longest idle first: one trimmed away leaves the
-- list, one delivered deliveries_max times is marked dead, any other is
-- delivered to the member once more. Reply: {OK, delivered, (offset,
-- deliveries, payload) per delivered entry, dead, offsets..., trimmed,
-- offsets...}.
local s, settings = visible_group(name, group)
if not s then
  return {NOT_FOUND}
end
local dm = tonumber(string.match(settings, '^%d+/(%d+)/'))
local gp, go, gi = group_keys(name, group)
local n = tonumber(s[6])
local len = drop_aged(name, s)
local first = n - len
local due = call('ZRANGEBYSCORE', gi, '-inf', NOW - tonumber(min_idle), 'LIMIT', 0,
  tonumber(most))
local delivered, dead, trimmed = {}, {}, {}
for _, m in ipairs(due) do
  local offset = tonumber(m)
  call('ZREM', gi, m)
  if offset < first then
    call('HDEL', gp, m)
    call('ZREM', go, m)
    trimmed[#trimmed + 1] = offset
  else
    local d, at, _, who = pending_entry(gp, m)
    if d >= dm then
      call('HSET', gp, m, pending_record(d, at, 1, who))
      dead[#dead + 1] = offset
    else
      d = d + 1
      call('HSET', gp, m, pending_record(d, NOW, 0, member))
      call('ZADD', gi, NOW, m)
      local payload = call('LINDEX', K .. 'sp:' .. name, offset - first)
      delivered[#delivered + 1] = {offset, d, payload}
    end
  end
end
local out = {OK, #delivered}
for _, e in ipairs(delivered) do
  out[#out + 1] = e[1]
  out[#out + 1] = e[2]
  out[#out + 1] = e[3]
end
for _, list in ipairs({dead, trimmed}) do
  out[#out + 1] = #list
  for _, offset in ipairs(list) do
    out[#out + 1] = offset
  end
end
return out
