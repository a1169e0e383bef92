-- function: tenant
-- arguments: name, consumer
-- reply: first uint, next uint, entries uint, bytes uint, consumers uint, committed int, groups uint
-- stream_info: `consumer` a consumer ('' for none). Entries
-- past the stream's age go first, so it counts what a read returns. Reply:
-- {OK, first offset held, next offset, entries, payload bytes, consumers,
-- the consumer's committed offset (-1: none), consumer groups}.
local s = visible_stream(name)
if not s then
  return {NOT_FOUND}
end
local n = tonumber(s[6])
local len, b = drop_aged(name, s)
local consumers = K .. 'sc:' .. name
local committed = -1
if consumer ~= '' then
  committed = tonumber(call('HGET', consumers, consumer) or '-1')
end
return {OK, n - len, n, len, b, call('HLEN', consumers), committed,
  call('HLEN', K .. 'sg:' .. name)}
