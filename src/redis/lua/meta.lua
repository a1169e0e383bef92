-- function: meta
-- The store's incarnation: KEYS[1] is the meta key "{<ns>}:meta"; ARGV[1]
-- a fresh random incarnation, kept only if the key holds none (a new store,
-- or a server that lost its data). Reply: {incarnation, born, known, used},
-- born being the server's clock in microseconds when the incarnation
-- began: every fence of the incarnation is at least that.
--
-- The register "{<ns>}:meta:tenants" (a hash, in the meta key's slot)
-- holds the tenants whose record this incarnation has made, each with the
-- generation of its last making. ARGV[2], when given, is a tenant: `known`
-- says whether it is registered; with ARGV[3] "1" it is registered too
-- (its record is about to be made) under a new generation, unless it is
-- new and the register already holds ARGV[4] tenants (`tenants_max`; -1:
-- none): then `known` is -1 and `used` the register's size, and nothing
-- is written. A tenant registered whose record is missing lost it with
-- its slot (`begin` in shared/50_begin.lua); one that held nothing for long is
-- taken off by `forget_idle_tenants` (src/redis/tenant.rs, ADR 0072).
--
-- ARGV[1] 'scan', ARGV[2] a cursor, ARGV[3] a count: one HSCAN step of
-- the register. Reply: {next cursor ('0' when done), tenant, generation,
-- ...}.
-- ARGV[1] 'unregister', ARGV[2] a tenant, ARGV[3] a generation: takes the
-- tenant off the register if it is still at that generation. Reply: 1 if
-- it was.
local register = KEYS[1] .. ':tenants'
if ARGV[1] == 'scan' then
  local scan = call('HSCAN', register, ARGV[2], 'COUNT', ARGV[3])
  local out = {scan[1]}
  for _, part in ipairs(scan[2]) do
    out[#out + 1] = part
  end
  return out
elseif ARGV[1] == 'unregister' then
  if call('HGET', register, ARGV[2]) == ARGV[3] then
    call('HDEL', register, ARGV[2])
    return 1
  end
  return 0
end
local seen = call('HMGET', KEYS[1], 'i', 'b')
if not seen[1] then
  local clock = call('TIME')
  local born = string.format('%.0f', tonumber(clock[1]) * 1000000 + tonumber(clock[2]))
  call('DEL', register)
  call('HSET', KEYS[1], 'i', ARGV[1], 'b', born)
  seen = {ARGV[1], born}
end
local known, used = 0, 0
if ARGV[2] then
  known = call('HEXISTS', register, ARGV[2])
  if ARGV[3] == '1' then
    used = call('HLEN', register)
    local limit = tonumber(ARGV[4] or '-1')
    if known == 0 and limit >= 0 and used >= limit then
      return {seen[1], seen[2], -1, used}
    end
    call('HSET', register, ARGV[2], call('HINCRBY', KEYS[1], 'g', 1))
  end
end
return {seen[1], seen[2], known, used}
