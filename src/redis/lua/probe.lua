-- function: meta
-- arguments: formula, ...inputs
-- probe: the contract's formulas as this library computes them, for the
-- test that holds them to the rows of src/contract/rules.rs's tables.
-- `formula` is 'backoff', 'catch_up' or 'claim_live', `inputs` its inputs
-- as decimal text, in the tables' order. Reply: its outputs as text.
local n = {}
for i, input in ipairs(inputs) do
  n[i] = tonumber(input)
end
if formula == 'backoff' then
  return {num(backoff_delay(n[1], n[2], n[3], n[4]))}
elseif formula == 'catch_up' then
  local due, fires, next_at = catch_up(n[1], n[2], n[3], n[4], n[5])
  return {num(due), num(fires), num(next_at)}
elseif formula == 'claim_live' then
  return {claim_live(inputs[1], n[2], inputs[3], n[4]) and '1' or '0'}
end
return redis.error_reply('probe: unknown formula ' .. tostring(formula))
