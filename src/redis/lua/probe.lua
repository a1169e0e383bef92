-- function: meta
-- probe: the contract's formulas as this library computes them, for the
-- test that holds them to the rows of src/contract/rules.rs's tables.
-- ARGV[1] the formula ('backoff', 'catch_up' or 'claim_live'), then its
-- inputs as decimal text, in the tables' order. Reply: its outputs as text.
local op = ARGV[1]
if op == 'backoff' then
  return {num(backoff_delay(tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])))}
elseif op == 'catch_up' then
  local due, fires, next_at = catch_up(tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]),
    tonumber(ARGV[5]), tonumber(ARGV[6]))
  return {num(due), num(fires), num(next_at)}
elseif op == 'claim_live' then
  return {claim_live(ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])) and '1' or '0'}
end
return redis.error_reply('probe: unknown formula ' .. tostring(op))
