-- function: tenant
-- extend_claim: ARGV[3] queue, ARGV[4] job number, ARGV[5] claim token,
-- ARGV[6] visibility (ms, '' for the queue's). The live claim now lapses
-- that long after now, the same token, the attempt unused. Reply: {OK,
-- the visibility (ms)}, {NOT_FOUND} or {STALE_CLAIM}.
local name, seq = ARGV[3], ARGV[4]
local q, refused = claimed_job(name, seq, ARGV[5])
if not q then
  return refused
end
local vis = q[4]
if ARGV[6] ~= '' then
  vis = tonumber(ARGV[6])
end
call('ZADD', qk('qc', name), num(NOW + vis), seq)
return {OK, vis}
