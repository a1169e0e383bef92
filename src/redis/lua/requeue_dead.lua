-- function: tenant
-- requeue_dead: ARGV[3] queue, ARGV[4] job number, ARGV[5] the queue's
-- wake channel. The dead letter is ready again with fresh attempts.
-- Reply: {OK} or {NOT_FOUND}.
local name, seq = ARGV[3], ARGV[4]
if not queue_now(name) or not call('ZSCORE', qk('qx', name), seq) then
  return {NOT_FOUND}
end
call('ZREM', qk('qx', name), seq)
call('HDEL', qk('qy', name), seq)
call('HSET', qk('qa', name), seq, '0')
make_ready(name, seq)
publish_wake(ARGV[5])
return {OK}
