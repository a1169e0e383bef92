-- function: frees
-- arguments: name, seq
-- cancel_job: `name` the queue, `seq` the job's number. The job leaves the
-- queue whatever its state (a claim on it is then answered NOT_FOUND).
-- A removal, so it runs on a server at maxmemory. Reply: {OK} or
-- {NOT_FOUND}.
if not queue_now(name) or call('HEXISTS', qk('qp', name), seq) == 0 then
  return {NOT_FOUND}
end
remove_job(name, seq)
return {OK}
