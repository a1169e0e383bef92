-- function: meta
-- arguments: ...tokens
-- room_give: gives the reservations `tokens` back (KEYS[1] "{<ns>}:room"
-- or a share's). Reply: {OK}.
room_give(KEYS[1] .. ':', tokens)
return {OK}
