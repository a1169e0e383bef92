-- The store's incarnation: KEYS[1] is the meta key "{<ns>}:meta"; ARGV[1]
-- a fresh random incarnation, kept only if the key holds none (a new store,
-- or a server that lost its data). Reply: {incarnation, born}, born being
-- the server's clock in microseconds when the incarnation began: every
-- fence of the incarnation is at least that.
local seen = redis.call('HMGET', KEYS[1], 'i', 'b')
if seen[1] then
  return {seen[1], seen[2]}
end
local clock = redis.call('TIME')
local born = string.format('%.0f', tonumber(clock[1]) * 1000000 + tonumber(clock[2]))
redis.call('HSET', KEYS[1], 'i', ARGV[1], 'b', born)
return {ARGV[1], born}
