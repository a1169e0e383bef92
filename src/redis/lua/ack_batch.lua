-- function: tenant
-- arguments: name, ...acks
-- reply: each: code int
-- ack_batch: `name` the queue, then `acks`: pairs of a job number and its
-- claim token. Each pair is acknowledged on its own, as `ack` would:
-- removed if the claim is its live one. Reply: {OK, then per pair OK,
-- NOT_FOUND or STALE_CLAIM} or {NOT_FOUND} for a missing queue.
if not queue_now(name) then
  return {NOT_FOUND}
end
local out = {OK}
for i = 1, #acks - 1, 2 do
  local seq = acks[i]
  local refused = check_claim(name, seq, acks[i + 1])
  if refused then
    out[#out + 1] = refused[1]
  else
    remove_job(name, seq)
    out[#out + 1] = OK
  end
end
return out
