-- function: meta
-- arguments: tenant, taken, next_due
-- due_swept: `tenant` was swept, taken from the due index (KEYS[1]
-- "{<ns>}:due") at score `taken`, and its next deadline is `next_due`
-- (-1: none): its new place, unless a write lowered it meanwhile (then
-- the lower of the two stays). Reply: 1.
local next_at = tonumber(next_due)
local current = call('ZSCORE', KEYS[1], tenant)
if current and tonumber(current) ~= tonumber(taken) then
  if next_at >= 0 and next_at < tonumber(current) then
    call('ZADD', KEYS[1], next_due, tenant)
  end
elseif next_at < 0 then
  call('ZREM', KEYS[1], tenant)
else
  call('ZADD', KEYS[1], next_due, tenant)
end
return 1
