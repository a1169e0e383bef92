-- function: meta
-- arguments: letter, cursor, count
-- reply: cursor text; each: token text, key text
-- room_stale: one scan step of budget `letter`'s reservations (KEYS[1]
-- "{<ns>}:room"), from `cursor`, about `count`. Reply: {OK, the next
-- cursor ('0' when done), then token and record key of each reservation
-- in that part of the scan taken BUDGET_RECLAIM_MS ago or more} (for the
-- engine to ask each record whether it holds its token, and give back
-- those that do not).
if not BUDGETS[letter] then
  return redis.error_reply('room_stale: not a budget: ' .. letter)
end
local _, now = clock()
local scan = call('HSCAN', KEYS[1] .. ':' .. letter, cursor, 'COUNT', count)
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
