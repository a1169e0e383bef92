-- function: tenant
-- arguments: fence, lock_name, wake_prefix, catch_up_max, draining
-- reply: fired uint, skipped uint, next_in int; each: name text, code int, scope int, limit int, used int
-- run_schedules: `fence` the runner holds the scheduler lock `lock_name`
-- with; `wake_prefix` the prefix of a queue's wake channel;
-- `catch_up_max` the most missed fires one schedule enqueues; `draining`
-- '1' when the calling handle drains (its fires are refused with
-- DRAINING, as its enqueues are, and stay due). Refused
-- unless the lock is held with that fence now. Each schedule whose grid
-- point has passed enqueues one job per grid point passed (at most
-- `catch_up_max`, and at most what its queue has room for; the rest are
-- skipped) and moves to its next grid point, in the same step; with no
-- room at all it stays due, refused as one job would be. Reply: {OK, fired, skipped, ms to the next fire (-1:
-- none), then per schedule whose queue refused: its name and the
-- refusal's code and three values (0 when unused)} or {LEADERSHIP_LOST}.
local lock = call('HMGET', R .. 'k:' .. lock_name, 'f', 'd')
if not lock[1] or lock[1] ~= fence or tonumber(lock[2]) <= NOW then
  return {LEADERSHIP_LOST}
end
local most = tonumber(catch_up_max)
draining = draining == '1'
local fired, skipped, next_in = 0, 0, -1
local refused = {}
for _, name in ipairs(call('ZRANGE', SCHEDULES, 0, -1)) do
  local hkey = K .. 'h:' .. name
  local h = call('HMGET', hkey, 'iv', 'nx', 'q', 'p', 'f')
  local interval, at = tonumber(h[1]), tonumber(h[2])
  local q = queue_now(h[3])
  local room = q and queue_room(h[3], q, #h[4]) or 0
  local due, fires, next_at = catch_up(at, NOW, interval, most, room)
  if due > 0 then
    local first, refusal = nil, {DRAINING}
    if not draining then
      -- With no room, one job is what is refused (and says why).
      local payloads = {}
      for i = 1, math.max(fires, 1) do
        payloads[i] = h[4]
      end
      first, refusal = enqueue_jobs(h[3], payloads, nil, nil, wake_prefix .. h[3])
    end
    if first then
      fired = fired + fires
      skipped = skipped + due - fires
      at = next_at
      call('HSET', hkey, 'nx', num(at), 'f', num(tonumber(h[5]) + fires))
    else
      refused[#refused + 1] = {name, refusal}
    end
  end
  local left = math.max(at - NOW, 0)
  if next_in < 0 or left < next_in then
    next_in = left
  end
end
local out = {OK, fired, skipped, next_in}
for _, r in ipairs(refused) do
  out[#out + 1] = r[1]
  for i = 1, 4 do
    out[#out + 1] = r[2][i] or 0
  end
end
return out
