-- function: tenant
-- arguments: name, seq, token, delay, wake
-- snooze: `name` the queue, `seq` the job's number, `token` the claim's,
-- `delay` in ms (0: at once), `wake` the queue's wake channel. The live
-- claim ends without using an attempt: the job is ready after the delay
-- (ready jobs are ordered by priority, then number, so at once means in
-- its place), the
-- attempt the claim counted is given back, and the queue's workers are
-- woken (a waiting one then sleeps until the delay ends). Also how a
-- claim whose caller went away is given back. Reply: {OK}, {NOT_FOUND} or
-- {STALE_CLAIM} (the claim lapsed or was superseded: nothing changes).
local q, refused = claimed_job(name, seq, token)
if not q then
  return refused
end
unclaim(name, seq)
call('HINCRBY', qk('qa', name), seq, -1)
delay = tonumber(delay)
if delay == 0 then
  make_ready(name, seq)
else
  call('ZADD', qk('qd', name), num(NOW + delay), seq)
end
publish_wake(wake)
return {OK}
