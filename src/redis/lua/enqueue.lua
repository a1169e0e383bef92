-- enqueue: ARGV[3] queue, ARGV[4] delay (ms, 0 for none), ARGV[5]
-- attempts_max ('' for the queue's), ARGV[6] the queue's wake channel,
-- then one payload per job (one for `enqueue`, a batch's for
-- `enqueue_batch`), all or none. Reply: {OK, the first job's number (the
-- others follow it)} or a refusal.
local delay = tonumber(ARGV[4])
local due = nil
if delay > 0 then
  due = NOW + delay
end
local attempts = ARGV[5]
if attempts == '' then
  attempts = nil
end
local payloads = {}
for i = 7, #ARGV do
  payloads[#payloads + 1] = ARGV[i]
end
local first, refused = enqueue_jobs(ARGV[3], payloads, due, attempts, ARGV[6])
if not first then
  return refused
end
return {OK, tonumber(first)}
