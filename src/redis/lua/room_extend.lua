-- function: meta
-- arguments: span, ...tokens
-- reply: horizon uint
-- room_extend: moves the reservations `tokens` out to now + `span` ms
-- (KEYS[1] "{<ns>}:room" or a share's). Reply: {OK, horizon}.
local _, now = clock()
return {OK, room_extend(KEYS[1] .. ':', now, tonumber(span), tokens)}
