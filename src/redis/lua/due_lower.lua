-- function: meta
-- arguments: tenant, deadline
-- due_lower: the store's due index, KEYS[1] "{<ns>}:due" (tenants by
-- their earliest deadline, in the meta key's slot): lowers `tenant`'s
-- place to `deadline` (or adds it). Reply: 1.
call('ZADD', KEYS[1], 'LT', deadline, tenant)
return 1
