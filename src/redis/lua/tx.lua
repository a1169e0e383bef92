-- function: tenant
-- tx: a transaction of one tenant's changes, all or none (ADR 0069).
-- ARGV[3] the number of operations, then for each: its function's name
-- (an OPS entry), the number of its arguments, and its arguments (as the
-- function takes them from ARGV[3] on). Each runs as its own call would,
-- in order, with every write journaled; the room the engine took for the
-- transaction (a cluster) is handed out by letter, in order.
-- Reply: {OK, each operation's reply}; the first refusal, with the
-- operation's number (1-based) appended, after every write was taken
-- back; ROOM with every operation's needs, after every write was taken
-- back.
local all, head = ARGV, {ARGV[1], ARGV[2]}
local pool = {}
local grants = string.match(ARGV[2], '^[^;]*;[^;]*;(.*)$') or ''
for token, horizon in string.gmatch(grants, '([^,@]+)@(%d+)') do
  if token ~= '+' and string.sub(token, 1, 1) ~= '>' then
    pool[#pool + 1] = {token, tonumber(horizon), letter = string.sub(token, 1, 1)}
  end
end
JOURNAL, DEFERRED = {}, {}
local replies, refused = {OK}, nil
local at = 4
for i = 1, tonumber(all[3]) do
  local name, count = all[at], tonumber(all[at + 1])
  local args = {head[1], head[2]}
  for j = 1, count do
    args[j + 2] = all[at + 1 + j]
  end
  at = at + 2 + count
  GRANTS = nil
  for _, g in ipairs(pool) do
    if not g.used and not (GRANTS and GRANTS[g.letter]) then
      GRANTS = GRANTS or {}
      GRANTS[g.letter] = g
    end
  end
  ARGV = args
  local reply = OPS[name]()
  if reply[1] ~= OK and reply[1] ~= ROOM then
    reply[#reply + 1] = i
    refused = reply
    break
  end
  replies[#replies + 1] = reply
end
-- `finish` gives back every grant not used.
GRANTS = pool
if refused or NEEDS then
  undo_journal()
  EVENTS, DUE = {}, nil
  for _, g in ipairs(pool) do
    g.used = nil
  end
  if refused then
    NEEDS = nil
    return refused
  end
  return {ROOM}
end
local held = DEFERRED
JOURNAL, DEFERRED = nil, nil
for _, message in ipairs(held) do
  call('PUBLISH', unpack(message))
end
return replies
