-- function: tenant
-- arguments: name, group, member, most
-- reply: skipped uint, first uint; each: payload bytes
-- read_group: `name` the stream, `most` the most entries to deliver. Delivers entries from the group's position on
-- (passing over what was trimmed) and puts each on its pending list.
-- Reply: {OK, offsets passed over, first offset delivered, payloads...},
-- or {CAPACITY, S_PENDING, pending_max, held} when the list is full.
local max = tonumber(most)
local s, settings = visible_group(name, group)
if not s then
  return {NOT_FOUND}
end
local pm = tonumber(string.match(settings, '^(%d+)/'))
local gp, go, gi = group_keys(name, group)
local held = call('HLEN', gp)
if held >= pm then
  return {CAPACITY, S_PENDING, pm, held}
end
local n = tonumber(s[6])
local len = drop_aged(name, s)
local first = n - len
local next = tonumber(call('HGET', K .. 'sgn:' .. name, group))
local skipped = 0
if next < first then
  skipped = first - next
  next = first
end
local count = math.min(max, pm - held, n - next)
local out = {OK, skipped, next}
if count <= 0 then
  if skipped > 0 then
    call('HSET', K .. 'sgn:' .. name, group, num(next))
  end
  return out
end
local payloads = call('LRANGE', K .. 'sp:' .. name, next - first, next - first + count - 1)
local record = pending_record(1, NOW, 0, member)
for i, payload in ipairs(payloads) do
  local m = group_member(next + i - 1)
  call('HSET', gp, m, record)
  call('ZADD', go, next + i - 1, m)
  call('ZADD', gi, NOW, m)
  out[#out + 1] = payload
end
call('HSET', K .. 'sgn:' .. name, group, num(next + #payloads))
return out
