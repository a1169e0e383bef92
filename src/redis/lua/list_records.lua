-- function: read
-- arguments: kind, lease
-- reply: each: name text, attrs attrs, version uint, remaining millis
-- list_records: the visible records of kind `kind` under lease `lease`,
-- in the order they were made (at most the kind's cap per lease, so in
-- one reply). Reply: {OK, then each record's name, attributes, version,
-- remaining}, or NOT_FOUND when the lease is not live.
if lease_state(lease) ~= OK then
  return {NOT_FOUND}
end
local out = {OK}
for _, name in ipairs(call('ZRANGE', DECLARED.children(kind, lease), 0, -1)) do
  local r = DECLARED.visible(kind, lease, name, lease)
  if r then
    out[#out + 1] = name
    out[#out + 1] = r[1]
    out[#out + 1] = tonumber(r[2])
    out[#out + 1] = tonumber(r[3]) - NOW
  end
end
return out
