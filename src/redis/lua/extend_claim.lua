-- function: tenant
-- arguments: name, seq, token, visibility
-- reply: visibility millis
-- extend_claim: `name` the queue, `seq` the job's number, `token` the
-- claim's, `visibility` in ms ('' for the queue's). The live claim now lapses
-- that long after now, the same token, the attempt unused. Reply: {OK,
-- the visibility (ms)}, {NOT_FOUND} or {STALE_CLAIM}.
local q, refused = claimed_job(name, seq, token)
if not q then
  return refused
end
local vis = q[4]
if visibility ~= '' then
  vis = tonumber(visibility)
end
call('ZADD', qk('qc', name), num(NOW + vis), seq)
return {OK, vis}
