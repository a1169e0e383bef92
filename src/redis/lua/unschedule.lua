-- function: tenant
-- arguments: name
-- unschedule: reply {OK} or {NOT_FOUND}.
local hkey = K .. 'h:' .. name
if call('EXISTS', hkey) == 0 then
  return {NOT_FOUND}
end
leave_index(SCHEDULES, name, E_SCHEDULES, RELEASED_)
call('DEL', hkey)
return {OK}
