-- function: meta
-- arguments: ...wanted
-- reply: each: token text, horizon uint
-- room_take: the store-wide ceilings' reservations (`room_take` in
-- shared/30_room.lua), for a cluster, where a tenant's function cannot
-- reach them (KEYS[1] "{<ns>}:room" or a share's). `wanted`: (letter,
-- limit (-1: none), span ms) triples (for a budget: its limit text and
-- the reservation's weights, `BUDGETS` in shared/30_room.lua). Reply:
-- {OK, token, horizon, ...} for each, or the refusal of the first full
-- ceiling.
local _, now = clock()
local asked = {}
for i = 1, #wanted - 2, 3 do
  asked[#asked + 1] = {wanted[i], wanted[i + 1], wanted[i + 2]}
end
return room_take(KEYS[1] .. ':', now, asked)
