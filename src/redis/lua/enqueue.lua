-- enqueue: ARGV[3] queue, ARGV[4] payload, ARGV[5] delay (ms, 0 for
-- none), ARGV[6] attempts_max ('' for the queue's), ARGV[7] the queue's
-- wake channel. Reply: {OK, job number} or a refusal.
local delay = tonumber(ARGV[5])
local due = nil
if delay > 0 then
  due = NOW + delay
end
local attempts = ARGV[6]
if attempts == '' then
  attempts = nil
end
local first, refused = enqueue_jobs(ARGV[3], ARGV[4], 1, due, attempts, ARGV[7])
if not first then
  return refused
end
return {OK, tonumber(first)}
