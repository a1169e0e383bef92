-- function: meta
-- arguments: incarnation, tenant, register, tenants_max
-- meta: the store's incarnation. KEYS[1] is the meta key "{<ns>}:meta";
-- `incarnation` a fresh random one, kept only if the key holds none (a
-- new store, or a server that lost its data). Reply: {incarnation, born,
-- known, used}, born being the server's clock in microseconds when the
-- incarnation began: every fence of the incarnation is at least that.
--
-- The register "{<ns>}:meta:tenants" (a hash, in the meta key's slot)
-- holds the tenants whose record this incarnation has made, each with the
-- generation of its last making. `tenant` ('' for none): `known` says
-- whether it is registered; with `register` '1' it is registered too (its
-- record is about to be made) under a new generation, unless it is new
-- and the register already holds `tenants_max` tenants (-1: none): then
-- `known` is -1 and `used` the register's size, and nothing is written.
-- A tenant registered whose record is missing lost it with its slot
-- (`begin` in shared/50_begin.lua); one that held nothing for long is
-- taken off by `forget_idle_tenants` (src/redis/tenant.rs, ADR 0072;
-- `meta_scan`, `meta_unregister`).
local register_key = KEYS[1] .. ':tenants'
local seen = call('HMGET', KEYS[1], 'i', 'b')
if not seen[1] then
  local clock = call('TIME')
  local born = string.format('%.0f', tonumber(clock[1]) * 1000000 + tonumber(clock[2]))
  call('DEL', register_key)
  call('HSET', KEYS[1], 'i', incarnation, 'b', born)
  seen = {incarnation, born}
end
local known, used = 0, 0
if tenant ~= '' then
  known = call('HEXISTS', register_key, tenant)
  if register == '1' then
    used = call('HLEN', register_key)
    local limit = tonumber(tenants_max)
    if known == 0 and limit >= 0 and used >= limit then
      return {seen[1], seen[2], -1, used}
    end
    call('HSET', register_key, tenant, call('HINCRBY', KEYS[1], 'g', 1))
  end
end
return {seen[1], seen[2], known, used}
