-- function: meta
-- arguments: tenant, generation
-- meta_unregister: takes `tenant` off the tenants' register (`meta`) if it
-- is still at `generation`. Reply: 1 if it was, else 0.
local register_key = KEYS[1] .. ':tenants'
if call('HGET', register_key, tenant) == generation then
  call('HDEL', register_key, tenant)
  return 1
end
return 0
