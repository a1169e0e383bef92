-- The journal: how a function writes (`call`), and how a transaction
-- takes its writes back. Then the number formats every file shares.
--
-- Transactions (`tx.lua`, ADR 0069). While JOURNAL is a table, every write
-- a function makes through `call` first records the commands that undo it
-- (applied newest first by `undo_journal`), and a PUBLISH waits in
-- DEFERRED until the transaction commits. Every function writes through
-- `call`, never `redis.call`, so that a transaction can take back what
-- the operations before a refused one wrote. Outside a transaction `call`
-- is `redis.call` with one test.
local JOURNAL, DEFERRED
-- Per write command: records what undoes it, given its key and its other
-- arguments (the command has not run yet). What a function may call
-- inside a transaction without an undo: READS.
local UNDO, READS
do
  local function undo(...)
    JOURNAL[#JOURNAL + 1] = {...}
  end

  -- Before a write that may empty `key` (Redis then drops the key and its
  -- expiry): restores its expiry after the elements come back.
  local function keep_expiry(key)
    local at = redis.call('PEXPIRETIME', key)
    if at > 0 then
      undo('PEXPIREAT', key, at)
    end
  end

  -- A whole key as it is now, restored as it was (or kept absent).
  local function keep_key(key)
    local dump = redis.call('DUMP', key)
    if dump then
      local at = redis.call('PEXPIRETIME', key)
      if at > 0 then
        undo('RESTORE', key, at, dump, 'REPLACE', 'ABSTTL')
      else
        undo('RESTORE', key, 0, dump, 'REPLACE')
      end
    else
      undo('DEL', key)
    end
  end

  -- Sorted-set members with their scores, as ZADD arguments undoing their
  -- removal.
  local function readd(key, with_scores)
    for i = 1, #with_scores, 2 do
      undo('ZADD', key, with_scores[i + 1], with_scores[i])
    end
  end

  local ZADD_FLAGS = {NX = true, XX = true, GT = true, LT = true, CH = true}

  UNDO = {
    HSET = function(key, a)
      for i = 1, #a, 2 do
        local old = redis.call('HGET', key, a[i])
        if old then
          undo('HSET', key, a[i], old)
        else
          undo('HDEL', key, a[i])
        end
      end
    end,
    HDEL = function(key, a)
      keep_expiry(key)
      for _, field in ipairs(a) do
        local old = redis.call('HGET', key, field)
        if old then
          undo('HSET', key, field, old)
        end
      end
    end,
    ZADD = function(key, a)
      local i = 1
      while ZADD_FLAGS[a[i]] do
        i = i + 1
      end
      for j = i, #a, 2 do
        local old = redis.call('ZSCORE', key, a[j + 1])
        if old then
          undo('ZADD', key, old, a[j + 1])
        else
          undo('ZREM', key, a[j + 1])
        end
      end
    end,
    ZREM = function(key, a)
      keep_expiry(key)
      for _, member in ipairs(a) do
        local old = redis.call('ZSCORE', key, member)
        if old then
          undo('ZADD', key, old, member)
        end
      end
    end,
    ZREMRANGEBYSCORE = function(key, a)
      keep_expiry(key)
      readd(key, redis.call('ZRANGEBYSCORE', key, a[1], a[2], 'WITHSCORES'))
    end,
    ZPOPMIN = function(key, a)
      keep_expiry(key)
      readd(key, redis.call('ZRANGE', key, 0, tonumber(a[1] or 1) - 1, 'WITHSCORES'))
    end,
    SADD = function(key, a)
      for _, member in ipairs(a) do
        if redis.call('SISMEMBER', key, member) == 0 then
          undo('SREM', key, member)
        end
      end
    end,
    SREM = function(key, a)
      keep_expiry(key)
      for _, member in ipairs(a) do
        if redis.call('SISMEMBER', key, member) == 1 then
          undo('SADD', key, member)
        end
      end
    end,
    RPUSH = function(key, a)
      undo('RPOP', key, #a)
    end,
    LPOP = function(key, a)
      keep_expiry(key)
      local popped = redis.call('LRANGE', key, 0, tonumber(a[1] or 1) - 1)
      if #popped > 0 then
        local back = {'LPUSH', key}
        for i = #popped, 1, -1 do
          back[#back + 1] = popped[i]
        end
        JOURNAL[#JOURNAL + 1] = back
      end
    end,
    PEXPIREAT = function(key)
      local at = redis.call('PEXPIRETIME', key)
      if at == -1 then
        undo('PERSIST', key)
      elseif at > 0 then
        undo('PEXPIREAT', key, at)
      end
    end,
    SET = keep_key,
    INCRBY = keep_key,
    LTRIM = keep_key,
    DEL = function(key, a)
      keep_key(key)
      for _, other in ipairs(a) do
        keep_key(other)
      end
    end,
  }
  UNDO.PEXPIRE = UNDO.PEXPIREAT
  -- A field counted up: its old value back (HSET records exactly that).
  UNDO.HINCRBY = function(key, a)
    UNDO.HSET(key, {a[1], a[2]})
  end

  READS = {HGET = true, HMGET = true, HLEN = true, HEXISTS = true, HKEYS = true,
    HSCAN = true, GET = true, EXISTS = true, TIME = true, ZSCORE = true,
    ZCARD = true, ZCOUNT = true, ZRANGE = true, ZREVRANGE = true,
    ZRANGEBYSCORE = true, ZRANGEBYLEX = true, SMEMBERS = true, SCARD = true,
    SISMEMBER = true, LINDEX = true, LRANGE = true, LLEN = true, PTTL = true,
    PEXPIRETIME = true}
end

local function call(command, ...)
  if JOURNAL then
    local record = UNDO[command]
    if record then
      local args = {...}
      local key = table.remove(args, 1)
      record(key, args)
    elseif command == 'PUBLISH' then
      DEFERRED[#DEFERRED + 1] = {...}
      return 0
    elseif not READS[command] then
      error('relaystore: ' .. command .. ' has no undo inside a transaction')
    end
  end
  return redis.call(command, ...)
end

-- Takes back every write recorded since JOURNAL was set, newest first,
-- and ends the journal (and drops what it held to publish).
local function undo_journal()
  local journal = JOURNAL
  JOURNAL, DEFERRED = nil, nil
  for i = #journal, 1, -1 do
    redis.call(unpack(journal[i]))
  end
end

-- Integers as decimal text (Lua numbers are doubles; everything stored
-- is an integer below 2^53). `%d` formats the integer it converts to,
-- at half the server time of `%.0f`, which formats a float.
local function num(x)
  return string.format('%d', x)
end

-- A lease's member in LEASE_IDS: its sequence number, zero-padded so that
-- lexical order is numeric order.
local function lease_member(seq)
  return string.format('%016d', tonumber(seq))
end
