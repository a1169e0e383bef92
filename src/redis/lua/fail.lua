-- function: tenant
-- arguments: name, seq, token, reason, draw
-- fail: `name` the queue, `seq` the job's number, `token` the claim's,
-- `draw` a random draw (below 2^32) for the jitter. The job
-- retries after an equal-jitter exponential backoff (half of min(max,
-- base * 2^(attempt - 1)) for sure, the other half drawn), or becomes a
-- dead letter if that was its last attempt. Reply: {OK, the backoff in ms,
-- or -1 for a dead letter}, {NOT_FOUND} or {STALE_CLAIM}.
local q, refused = claimed_job(name, seq, token)
if not q then
  return refused
end
unclaim(name, seq)
local attempt = tonumber(call('HGET', qk('qa', name), seq))
if attempt >= tonumber(call('HGET', qk('qm', name), seq)) then
  call('ZADD', qk('qx', name), seq, seq)
  call('HSET', qk('qy', name), seq, reason)
  return {OK, -1}
end
local delay = backoff_delay(q[6], q[7], attempt, tonumber(draw))
call('ZADD', qk('qd', name), num(NOW + delay), seq)
return {OK, delay}
