-- function: read
-- reply: each: name text, spec text, interval millis, queue text, next_in millis, fired uint
-- schedules: the tenant's schedules by name. Reply: {OK, then per
-- schedule: name, spec, interval (ms), queue, ms to its next fire, fires
-- so far}.
local out = {OK}
for _, name in ipairs(call('ZRANGE', SCHEDULES, 0, -1)) do
  local h = call('HMGET', K .. 'h:' .. name, 'sp', 'iv', 'q', 'nx', 'f')
  out[#out + 1] = name
  out[#out + 1] = h[1]
  out[#out + 1] = tonumber(h[2])
  out[#out + 1] = h[3]
  out[#out + 1] = math.max(tonumber(h[4]) - NOW, 0)
  out[#out + 1] = tonumber(h[5])
end
return out
