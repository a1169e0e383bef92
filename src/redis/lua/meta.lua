-- The store's incarnation: KEYS[1] is the meta key "{<ns>}:meta"; ARGV[1]
-- a fresh random incarnation, kept only if the key holds none (a new store,
-- or a server that lost its data). Reply: {incarnation, born, known}, born
-- being the server's clock in microseconds when the incarnation began:
-- every fence of the incarnation is at least that.
--
-- The register "{<ns>}:meta:t" (a set, in the meta key's slot) holds the
-- tenants whose record this incarnation has made. ARGV[2], when given, is
-- a tenant: `known` says whether it is registered; with ARGV[3] "1" it is
-- registered too (its record is about to be made). A tenant registered
-- whose record is missing lost it with its slot (`begin` in the prelude).
local seen = call('HMGET', KEYS[1], 'i', 'b')
local register = KEYS[1] .. ':t'
if not seen[1] then
  local clock = call('TIME')
  local born = string.format('%.0f', tonumber(clock[1]) * 1000000 + tonumber(clock[2]))
  call('DEL', register)
  call('HSET', KEYS[1], 'i', ARGV[1], 'b', born)
  seen = {ARGV[1], born}
end
local known = 0
if ARGV[2] then
  if ARGV[3] == '1' then
    known = 1 - call('SADD', register, ARGV[2])
  else
    known = call('SISMEMBER', register, ARGV[2])
  end
end
return {seen[1], seen[2], known}
