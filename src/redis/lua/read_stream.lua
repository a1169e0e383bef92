-- function: read
-- arguments: name, from, most
-- reply: each: payload bytes
-- read_stream: `from` the offset to read from, `most` the most entries to
-- return. Writes nothing: entries past the stream's age
-- are skipped (the next append drops them). Reply: {OK, payloads...}
-- (from the offset on), {TRIMMED, first offset held} or {INVALID, PAST_THE_END}
-- for an offset past the end.
from = tonumber(from)
local max = tonumber(most)
local s = visible_stream(name)
if not s then
  return {NOT_FOUND}
end
local n = tonumber(s[6])
local entries = K .. 'sp:' .. name
local len = call('LLEN', entries)
local base = n - len
local first = base + aged(name, s[3], len)
if from < first then
  return {TRIMMED, first}
end
if from > n then
  return {INVALID, PAST_THE_END}
end
if max <= 0 or from == n then
  return {OK}
end
local out = call('LRANGE', entries, from - base, from - base + max - 1)
table.insert(out, 1, OK)
return out
