-- A per-tenant call's end, and the table of per-tenant bodies.
--
-- Ends a per-tenant call: {reply} when it removed nothing, moved no
-- deadline earlier and has no room to take or give back; else {reply,
-- events, last number, due (-1: none), room needed, room to give back}
-- (grants the call did not use are given back).
-- Removals are numbered from the tenant's event counter and published on
-- the store's channel for every instance (origin, tenant, the last
-- number, then the events, each as `<length>:<bytes>`).
local function finish(reply)
  if GRANTS then
    for _, g in pairs(GRANTS) do
      if not g.used then
        FREED = FREED or {}
        FREED[#FREED + 1] = g[1]
      end
    end
  end
  if EXTENDED then
    for _, swap in pairs(EXTENDED.swaps) do
      if not swap.used then
        FREED = FREED or {}
        FREED[#FREED + 1] = swap[1]
      end
    end
  end
  local n = #EVENTS
  if n == 0 then
    if DUE or NEEDS or FREED then
      return {reply, {}, 0, DUE or -1, NEEDS or {}, FREED or {}}
    end
    return {reply}
  end
  local last = call('INCRBY', TAG .. 'evs', n)
  local ns, tenant = string.match(TAG, '^{(.*):([^:]*)}:$')
  local parts = {ORIGIN, tenant, tostring(last)}
  for _, e in ipairs(EVENTS) do
    parts[#parts + 1] = e
  end
  for i, p in ipairs(parts) do
    parts[i] = #p .. ':' .. p
  end
  call('PUBLISH', 'relaystore:' .. ns .. ':events', table.concat(parts))
  return {reply, EVENTS, last, DUE or -1, NEEDS or {}, FREED or {}}
end

-- Every per-tenant function's body by operation name (src/redis/scripts.rs
-- fills it), so that a transaction (`tx.lua`) can run several in one call.
local OPS = {}

-- A notify staged in a transaction: ARGV[3] the wakes channel, ARGV[4]
-- the message (src/redis/wakes.rs makes it), published at the commit.
OPS.wake = function()
  call('PUBLISH', ARGV[3], ARGV[4])
  return {OK}
end
