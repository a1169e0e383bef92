-- release_lock: ARGV[3] name, ARGV[4] fence. Idempotent; never releases a
-- later holder's lock. Reply: {OK}. (A fence from before this
-- incarnation is answered by the engine before the call.)
local name, fence = ARGV[3], tonumber(ARGV[4])
local k = R .. 'k:' .. name
local l = redis.call('HMGET', k, 'f', 'l')
if l[1] and tonumber(l[1]) == fence then
  leave_index(LOCKS, name, E_LOCK, RELEASED_)
  redis.call('DEL', k)
  if l[2] ~= '' then
    redis.call('SREM', R .. 'la:' .. l[2], name)
  end
end
return {OK}
