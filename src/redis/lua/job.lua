-- function: tenant
-- arguments: name, seq
-- reply: state text, left millis, text text, attempts uint, attempts_max uint, payload bytes, priority uint
-- job: `name` the queue, `seq` the job's number. Settles what is due first.
-- Reply: {OK, state ('r' ready, 'd' delayed, 'c' claimed, 'x' dead), ms
-- left (delayed, claimed; else 0), the worker (claimed) or reason (dead)
-- or '', attempts, attempts_max, payload, priority} or {NOT_FOUND}.
if not queue_now(name) then
  return {NOT_FOUND}
end
local payload = call('HGET', qk('qp', name), seq)
if not payload then
  return {NOT_FOUND}
end
local state, left, text = 'r', 0, ''
local score = call('ZSCORE', qk('qd', name), seq)
if score then
  state, left = 'd', tonumber(score) - NOW
else
  score = call('ZSCORE', qk('qc', name), seq)
  if score then
    state, left = 'c', tonumber(score) - NOW
    text = call('HGET', qk('qw', name), seq)
  elseif call('ZSCORE', qk('qx', name), seq) then
    state, text = 'x', call('HGET', qk('qy', name), seq)
  end
end
return {OK, state, left, text, tonumber(call('HGET', qk('qa', name), seq)),
  tonumber(call('HGET', qk('qm', name), seq)), payload,
  tonumber(call('HGET', qk('qn', name), seq) or '0')}
