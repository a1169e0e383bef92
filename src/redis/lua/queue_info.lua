-- queue_info: ARGV[3] queue, ARGV[4] the lapsed claims' reason. Settles
-- what is due first. Reply: {OK, ready, delayed, claimed, dead, payload
-- bytes}.
local name = ARGV[3]
local q = queue_of(name)
if not q then
  return {NOT_FOUND}
end
settle(name, ARGV[4])
local out = {OK}
for _, part in ipairs(QUEUE_STATES) do
  out[#out + 1] = redis.call('ZCARD', qk(part, name))
end
out[#out + 1] = q[8]
return out
