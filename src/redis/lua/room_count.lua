-- function: meta
-- arguments: letter
-- reply: count uint
-- room_count: the reservations of `letter` (KEYS[1] "{<ns>}:room" or a
-- share's) whose horizon is ahead (for a budget: the reservations held).
-- Reply: {OK, count}.
local _, now = clock()
local base = KEYS[1] .. ':'
if BUDGETS[letter] then
  return {OK, tonumber(call('HGET', base .. string.upper(letter), 1) or '0')}
end
return {OK, call('ZCOUNT', base .. letter, '(' .. num(now), '+inf')}
