-- function: tenant
-- unschedule: ARGV[3] name. Reply: {OK} or {NOT_FOUND}.
local name = ARGV[3]
local hkey = K .. 'h:' .. name
if call('EXISTS', hkey) == 0 then
  return {NOT_FOUND}
end
leave_index(SCHEDULES, name, E_SCHEDULES, RELEASED_)
call('DEL', hkey)
return {OK}
