-- Queues and their jobs: layout, settling, claims, unique keys, removals.
--
-- Queues (SPEC §10), under K like streams. A queue is `q:<name>` (a hash:
-- `c` its settings as created, `jm` jobs_max, `bm` bytes_max, `dm`
-- dead_letters_max, `vis` visibility (ms), `am` attempts_max, `bb` and
-- `bx` the backoff's base and max (ms), `nb` payload bytes held, `rv` its
-- reservation) and, per job (by sequence number): hashes of payloads
-- `qp:`, attempts `qa:`, attempts_max `qm:`, the live claim's token `qt:`
-- and worker `qw:`, a dead letter's reason `qy:`, a priority above 0 `qn:`;
-- and one sorted set per state: ready `qr:` (scored by priority; members
-- of one score sort as strings, and job numbers are fences, at least the
-- server's clock in microseconds, so 16 digits from 2001 to 2286 and
-- sorted as numbers: oldest first), delayed `qd:`
-- (by due time), claimed `qc:` (by the time the claim lapses), dead `qx:`
-- (by number). Each job is in exactly one of the four. QUEUES indexes the
-- tenant's queues. Unique keys (`JobOptions::unique`): `qu:` maps a key to
-- "<job>:<window's end, ms>:<states>" (the states that keep it taken after
-- the window: 'w' waiting, 'c' claimed, 'd' dead), a job's key is in `qk:`,
-- and `ql:` holds the keys whose job left, by their window's end.
local QUEUE_FIELDS = {'qp', 'qa', 'qm', 'qt', 'qw', 'qy', 'qn', 'qk'}
local QUEUE_UNIQUE = {'qu', 'ql'}
local QUEUE_STATES = {'qr', 'qd', 'qc', 'qx'}

local function qk(part, name)
  return K .. part .. ':' .. name
end

-- The queue `name`'s settings and bytes {jm, bm, dm, vis, am, bb, bx, nb}
-- as numbers, or nil.
local function queue_of(name)
  local q = call('HMGET', K .. 'q:' .. name, 'jm', 'bm', 'dm', 'vis', 'am', 'bb', 'bx', 'nb')
  if not q[1] then
    return nil
  end
  for i = 1, 8 do
    q[i] = tonumber(q[i])
  end
  return q
end

-- Makes job `seq` of queue `name` ready, in its priority's place.
local function make_ready(name, seq)
  local priority = call('HGET', qk('qn', name), seq) or '0'
  call('ZADD', qk('qr', name), priority, seq)
end

-- Unique key `key` of queue `name`: its job's number (a string), its
-- window's end and its states; nil if the queue does not remember it.
local function unique_hold(name, key)
  local hold = call('HGET', qk('qu', name), key)
  if not hold then
    return nil
  end
  local seq, ends, states = string.match(hold, '^(%d+):(%d+):(%a*)$')
  return seq, tonumber(ends), states
end

-- Whether a hold (as `unique_hold` reads it) takes its key now: within its
-- window whatever became of the job, after it while the job is in one of
-- its states.
local function unique_takes(name, seq, ends, states)
  if NOW < ends then
    return true
  end
  local has = function(letter)
    return string.find(states, letter, 1, true) ~= nil
  end
  if call('ZSCORE', qk('qr', name), seq) or call('ZSCORE', qk('qd', name), seq) then
    return has('w')
  elseif call('ZSCORE', qk('qc', name), seq) then
    return has('c')
  elseif call('ZSCORE', qk('qx', name), seq) then
    return has('d')
  end
  return false
end

-- Forgets the unique keys whose job left and whose window ended by now.
local function forget_lapsed_keys(name)
  local lingering = qk('ql', name)
  for _, key in ipairs(call('ZRANGEBYSCORE', lingering, '-inf', NOW)) do
    call('ZREM', lingering, key)
    local seq = unique_hold(name, key)
    if seq and call('HEXISTS', qk('qp', name), seq) == 0 then
      call('HDEL', qk('qu', name), key)
    end
  end
end

-- Whether queue `name` (settings `q`, settled) takes a job under unique
-- key `key` now: nil if so (a key no longer taken is forgotten first),
-- else the reply: {OK, the job that takes it, 1} or a refusal for want
-- of room for one more key (`jobs_max` of them).
local function unique_admits(name, q, key)
  forget_lapsed_keys(name)
  local seq, ends, states = unique_hold(name, key)
  if seq then
    if unique_takes(name, seq, ends, states) then
      return {OK, tonumber(seq), 1}
    end
    call('HDEL', qk('qu', name), key)
  end
  local held = call('HLEN', qk('qu', name))
  if held >= q[1] then
    return {CAPACITY, Q_UNIQUE, q[1], held}
  end
  return nil
end

-- The reason a job whose last claim lapsed is dead-lettered with: `LAPSED`
-- in src/contract/names.rs, put here when the library is built.
local LAPSED = '@LAPSED@'

-- Moves what is due in queue `name` now: delayed jobs become ready; a
-- lapsed claim returns its job to ready, or makes it a dead letter (reason
-- `LAPSED`) if that was its last attempt. Only through `queue_now`.
local function settle(name)
  local delayed = qk('qd', name)
  for _, seq in ipairs(call('ZRANGEBYSCORE', delayed, '-inf', NOW)) do
    call('ZREM', delayed, seq)
    make_ready(name, seq)
  end
  local claimed = qk('qc', name)
  for _, seq in ipairs(call('ZRANGEBYSCORE', claimed, '-inf', NOW)) do
    call('ZREM', claimed, seq)
    call('HDEL', qk('qt', name), seq)
    call('HDEL', qk('qw', name), seq)
    local used = tonumber(call('HGET', qk('qa', name), seq))
    if used >= tonumber(call('HGET', qk('qm', name), seq)) then
      call('ZADD', qk('qx', name), seq, seq)
      call('HSET', qk('qy', name), seq, LAPSED)
    else
      make_ready(name, seq)
    end
  end
end

-- Queue `name` as `queue_of` gives it, with what fell due by now settled
-- first, or nil. Every function that reads or changes jobs starts here, so
-- no call's answer depends on whether another call, a read included, came
-- first.
local function queue_now(name)
  local q = queue_of(name)
  if q then
    settle(name)
  end
  return q
end

-- The time until something in queue `name` changes by itself (a delay
-- ends, a claim lapses), in ms, or -1.
local function queue_next(name)
  local next_at = -1
  for _, part in ipairs({'qd', 'qc'}) do
    local first = call('ZRANGE', qk(part, name), 0, 0, 'WITHSCORES')
    if first[2] then
      local at = tonumber(first[2])
      if next_at < 0 or at < next_at then
        next_at = at
      end
    end
  end
  if next_at < 0 then
    return -1
  end
  return math.max(next_at - NOW, 0)
end

-- The one validity rule of every claim operation: nil when `token` is job
-- `seq`'s live claim now, else the refusal. Checked before any change.
local function check_claim(name, seq, token)
  if call('HEXISTS', qk('qp', name), seq) == 0 then
    return {NOT_FOUND}
  end
  local lapses = call('ZSCORE', qk('qc', name), seq)
  if not lapses or not claim_live(call('HGET', qk('qt', name), seq), tonumber(lapses), token, NOW) then
    return {STALE_CLAIM}
  end
  return nil
end

-- Queue `name` (as `queue_now` gives it) if `token` is job `seq`'s live
-- claim; else nil and the refusal to answer ({NOT_FOUND} or
-- {STALE_CLAIM}). Where every change by a claim holder starts.
local function claimed_job(name, seq, token)
  local q = queue_now(name)
  if not q then
    return nil, {NOT_FOUND}
  end
  local refused = check_claim(name, seq, token)
  if refused then
    return nil, refused
  end
  return q
end

-- Takes job `seq` out of its claim (it is about to move elsewhere).
local function unclaim(name, seq)
  call('ZREM', qk('qc', name), seq)
  call('HDEL', qk('qt', name), seq)
  call('HDEL', qk('qw', name), seq)
end

-- Removes job `seq` of queue `name` in whatever state it is.
local function remove_job(name, seq)
  local payload = call('HGET', qk('qp', name), seq)
  if not payload then
    return
  end
  -- Its unique key stays remembered until the window ends.
  local key = call('HGET', qk('qk', name), seq)
  if key then
    local held, ends = unique_hold(name, key)
    if held and tonumber(held) == tonumber(seq) then
      call('ZADD', qk('ql', name), num(ends), key)
    end
  end
  for _, part in ipairs(QUEUE_FIELDS) do
    call('HDEL', qk(part, name), seq)
  end
  for _, part in ipairs(QUEUE_STATES) do
    call('ZREM', qk(part, name), seq)
  end
  call('HINCRBY', K .. 'q:' .. name, 'nb', -#payload)
end

-- How many more jobs of `size` bytes queue `name` (settings `q`, as
-- `queue_now` gives them) takes now: what `enqueue_jobs` checks, as a
-- count.
local function queue_room(name, q, size)
  if call('ZCARD', qk('qx', name)) >= q[3] then
    return 0
  end
  local room = q[1] - call('HLEN', qk('qp', name))
  if size > 0 then
    room = math.min(room, math.floor((q[2] - q[8]) / size))
  end
  return math.max(room, 0)
end

-- Whether queue `name` takes one job per entry of `payloads` now, all or
-- none: the one admission rule of enqueues. A queue at its dead-letter cap
-- takes nothing, nor one whose jobs or bytes would pass its caps. Returns
-- the queue's settings (`queue_now`'s) and the payloads' bytes, or nil and
-- the refusal. Writes nothing.
local function enqueue_admits(name, payloads)
  local q = queue_now(name)
  if not q then
    return nil, {NOT_FOUND}
  end
  local dead = call('ZCARD', qk('qx', name))
  if dead >= q[3] then
    return nil, {CAPACITY, Q_DEAD, q[3], dead}
  end
  local held = call('HLEN', qk('qp', name))
  if held + #payloads > q[1] then
    return nil, {CAPACITY, Q_JOBS, q[1], held}
  end
  local bytes = 0
  for _, payload in ipairs(payloads) do
    bytes = bytes + #payload
  end
  if q[8] + bytes > q[2] then
    return nil, {CAPACITY, Q_BYTES, q[2], q[8]}
  end
  return q, bytes
end

-- Enqueues on queue `name` (settings `q`) the `payloads` that
-- `enqueue_admits` admitted (`bytes` in all): ready, or delayed until `due`
-- (nil: ready), with `attempts` claims each (nil: the queue's), at
-- `priority` (nil: 0). Ready jobs wake the queue's workers (`wake`, its
-- channel). Returns the first job's number (the others follow it:
-- `next_fence` issues consecutive numbers within one call).
local function enqueue_admitted(name, q, bytes, payloads, due, attempts, priority, wake)
  local first
  priority = priority or 0
  for _, payload in ipairs(payloads) do
    local seq = num(next_fence())
    first = first or seq
    call('HSET', qk('qp', name), seq, payload)
    call('HSET', qk('qa', name), seq, '0')
    call('HSET', qk('qm', name), seq, attempts or num(q[5]))
    if priority > 0 then
      call('HSET', qk('qn', name), seq, priority)
    end
    if due then
      call('ZADD', qk('qd', name), num(due), seq)
    else
      call('ZADD', qk('qr', name), priority, seq)
    end
  end
  call('HINCRBY', K .. 'q:' .. name, 'nb', bytes)
  if not due then
    publish_wake(wake)
  end
  return first
end

-- Enqueues one job per entry of `payloads` on queue `name`, all or none
-- (`enqueue_admits`, then `enqueue_admitted`). Returns the first job's
-- number, or nil and the refusal.
local function enqueue_jobs(name, payloads, due, attempts, wake)
  local q, bytes = enqueue_admits(name, payloads)
  if not q then
    return nil, bytes
  end
  return enqueue_admitted(name, q, bytes, payloads, due, attempts, nil, wake)
end

-- Removes queue `name` with every job in it, announced with `cause`.
local function drop_queue(name, cause)
  leave_index(QUEUES, name, E_QUEUES, cause)
  local keys = {K .. 'q:' .. name}
  for _, parts in ipairs({QUEUE_FIELDS, QUEUE_STATES, QUEUE_UNIQUE}) do
    for _, part in ipairs(parts) do
      keys[#keys + 1] = qk(part, name)
    end
  end
  call('DEL', unpack(keys))
end
