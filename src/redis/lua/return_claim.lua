-- return_claim: ARGV[3] queue, ARGV[4] job number, ARGV[5] claim token,
-- ARGV[6] the queue's wake channel. A claim whose caller went away before
-- it got the answer: the job is ready again at once, in its place (ready
-- jobs are ordered by number), and the attempt the claim used is given
-- back. Reply: {OK}, {NOT_FOUND} or {STALE_CLAIM} (the claim lapsed or was
-- superseded meanwhile: nothing to give back).
local name, seq = ARGV[3], ARGV[4]
local q, refused = claimed_job(name, seq, ARGV[5])
if not q then
  return refused
end
unclaim(name, seq)
redis.call('HINCRBY', qk('qa', name), seq, -1)
redis.call('ZADD', qk('qr', name), seq, seq)
publish_wake(ARGV[6])
return {OK}
