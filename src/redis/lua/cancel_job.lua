-- function: frees
-- cancel_job: ARGV[3] queue, ARGV[4] job number. The job leaves the
-- queue whatever its state (a claim on it is then answered NOT_FOUND).
-- A removal, so it runs on a server at maxmemory. Reply: {OK} or
-- {NOT_FOUND}.
local name, seq = ARGV[3], ARGV[4]
if not queue_now(name) or call('HEXISTS', qk('qp', name), seq) == 0 then
  return {NOT_FOUND}
end
remove_job(name, seq)
return {OK}
