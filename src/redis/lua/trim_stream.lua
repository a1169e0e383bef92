-- function: tenant
-- arguments: name, before
-- reply: first uint
-- trim_stream: `before` the offset below which every entry
-- goes (entries past the stream's age go first). Reply: {OK, first offset
-- held} or {INVALID, PAST_THE_END} for an offset past the end.
before = tonumber(before)
local s = visible_stream(name)
if not s then
  return {NOT_FOUND}
end
local n = tonumber(s[6])
if before > n then
  return {INVALID, PAST_THE_END}
end
local len, b = drop_aged(name, s)
local base = n - len
local k = math.min(math.max(before - base, 0), len)
if k > 0 then
  b = b - pop_entries(name, k)
  call('HSET', K .. 's:' .. name, 'b', num(b))
end
return {OK, math.max(base, before)}
