-- function: tenant
-- ack: ARGV[3] queue, ARGV[4] job number, ARGV[5] claim token. Removes
-- the job if the claim is its live one. Reply: {OK}, {NOT_FOUND} or
-- {STALE_CLAIM}.
local name, seq = ARGV[3], ARGV[4]
local q, refused = claimed_job(name, seq, ARGV[5])
if not q then
  return refused
end
remove_job(name, seq)
return {OK}
