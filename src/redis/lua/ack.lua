-- function: tenant
-- arguments: name, seq, token
-- ack: `name` the queue, `seq` the job's number, `token` the claim's. Removes
-- the job if the claim is its live one. Reply: {OK}, {NOT_FOUND} or
-- {STALE_CLAIM}.
local q, refused = claimed_job(name, seq, token)
if not q then
  return refused
end
remove_job(name, seq)
return {OK}
