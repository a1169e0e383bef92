-- function: tenant
-- arguments: name, seq, wake
-- requeue_dead: `name` the queue, `seq` the job's number, `wake` the
-- queue's wake channel. The dead letter is ready again with fresh attempts.
-- Reply: {OK} or {NOT_FOUND}.
if not queue_now(name) or not call('ZSCORE', qk('qx', name), seq) then
  return {NOT_FOUND}
end
call('ZREM', qk('qx', name), seq)
call('HDEL', qk('qy', name), seq)
call('HSET', qk('qa', name), seq, '0')
make_ready(name, seq)
publish_wake(wake)
return {OK}
