-- function: frees
-- arguments: name, fence
-- release_lock: idempotent; never releases a
-- later holder's lock. Reply: {OK}. (A fence from before this
-- incarnation is answered by the engine before the call.)
fence = tonumber(fence)
local k = R .. 'k:' .. name
local f = call('HGET', k, 'f')
if f and tonumber(f) == fence then
  leave_index(LOCKS, name, E_LOCKS, RELEASED_)
  unlink(k, 'la:', name)
  call('DEL', k)
end
return {OK}
