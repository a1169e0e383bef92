-- function: meta
-- arguments: cursor, count
-- meta_scan: one HSCAN step of the tenants' register (`meta`), from
-- `cursor`, about `count` entries. Reply: {next cursor ('0' when done),
-- tenant, generation, ...}.
local scan = call('HSCAN', KEYS[1] .. ':tenants', cursor, 'COUNT', count)
local out = {scan[1]}
for _, part in ipairs(scan[2]) do
  out[#out + 1] = part
end
return out
