-- function: meta
-- room: the store-wide ceilings' reservations (`room_*` in shared/30_room.lua),
-- for a cluster, where a tenant's function cannot reach them. KEYS[1] is
-- "{<ns>}:room". ARGV[1] is the operation:
-- 'take', then (letter, limit (-1: none), span ms) triples (for a
--   budget: its limit text and the reservation's weights, `BUDGETS` in
--   shared/30_room.lua): {OK, token, horizon, ...} for each, or the refusal of
--   the first full ceiling;
-- 'give', then tokens: {OK};
-- 'extend', then a span (ms) and tokens: {OK, horizon};
-- 'count', then a letter: {OK, reservations whose horizon is ahead}
--   (for a budget: the reservations held);
-- 'stale', then a budget's letter, a scan cursor and a count: {OK, the
--   next cursor ('0' when done), then token and record key of each
--   reservation in that part of the scan taken BUDGET_RECLAIM_MS ago or
--   more} (for the engine to ask each record whether it holds its token,
--   and give back those that do not).
local _, now = clock()
local base = KEYS[1] .. ':'
local op = ARGV[1]
if op == 'take' then
  local wanted = {}
  for i = 2, #ARGV, 3 do
    wanted[#wanted + 1] = {ARGV[i], ARGV[i + 1], ARGV[i + 2]}
  end
  return room_take(base, now, wanted)
elseif op == 'give' then
  room_give(base, {unpack(ARGV, 2)})
  return {OK}
elseif op == 'extend' then
  return {OK, room_extend(base, now, tonumber(ARGV[2]), {unpack(ARGV, 3)})}
elseif op == 'stale' and BUDGETS[ARGV[2]] then
  local scan = call('HSCAN', base .. ARGV[2], ARGV[3], 'COUNT', ARGV[4])
  local out = {OK, scan[1]}
  local pairs_ = scan[2]
  for i = 1, #pairs_, 2 do
    local _, key, taken = budget_parts(pairs_[i + 1])
    if key and now - tonumber(taken) >= BUDGET_RECLAIM_MS then
      out[#out + 1] = pairs_[i]
      out[#out + 1] = key
    end
  end
  return out
elseif op == 'count' and BUDGETS[ARGV[2]] then
  return {OK, tonumber(call('HGET', base .. string.upper(ARGV[2]), 1) or '0')}
elseif op == 'count' then
  return {OK, call('ZCOUNT', base .. ARGV[2], '(' .. num(now), '+inf')}
end
return redis.error_reply('unknown room operation: ' .. op)
