-- The contract's formulas and the server's clock.
--
-- The contract's formulas, as pure functions of their inputs (each the
-- twin of one in src/contract/rules.rs, held to the same table by the
-- `probe` function and tests/redis_rules.rs).

-- The equal-jitter backoff after attempt `attempt` (1-based), base and max
-- in ms, for the random `draw`: half of min(max, base * 2^(attempt - 1))
-- for sure, the draw reduced to between zero and the other half.
local function backoff_delay(base, max, attempt, draw)
  local capped = math.min(max, base * 2 ^ math.min(attempt - 1, 63))
  local fixed = math.floor(capped / 2)
  return fixed + draw % (capped - fixed + 1)
end

-- A schedule's catch-up step at `now` from its next grid point `at`: the
-- grid points passed, the fires (at most `most`), the next grid point.
local function catch_up(at, now, interval, most, room)
  if now < at then
    return 0, 0, at
  end
  local due = math.floor((now - at) / interval) + 1
  local fires = math.min(due, most, room)
  if fires == 0 then
    return due, 0, at
  end
  return due, fires, at + due * interval
end

-- The claim-validity rule: the claim `held`, lapsing at `lapses`, is live
-- at `now` for `token` (tokens as text).
local function claim_live(held, lapses, token, now)
  return held == token and now < lapses
end

-- The server's clock: {microseconds, milliseconds}.
local function clock()
  local t = call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return us, math.floor(us / 1000)
end
