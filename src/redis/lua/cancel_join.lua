-- function: frees
-- cancel_join: ARGV[3] attempt sequence number. A pending or bound attempt
-- goes; a consumed one is REPLAY.
local seq = ARGV[3]
local code, a = attempt(seq, nil)
if code ~= OK then
  return {code}
end
drop_attempt(seq, a[1], RELEASED_)
return {OK}
