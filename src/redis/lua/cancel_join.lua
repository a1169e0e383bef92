-- function: frees
-- arguments: seq
-- cancel_join: attempt `seq`. A pending or bound attempt goes; a consumed
-- one is REPLAY.
local code, a = attempt(seq, nil)
if code ~= OK then
  return {code}
end
drop_attempt(seq, a[1], RELEASED_)
return {OK}
