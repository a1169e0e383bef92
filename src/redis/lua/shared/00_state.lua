-- The library's shared part is this directory's files, in the order of
-- their names (a file uses only what files before it define); then one
-- registered function per transition, each body in its own file of
-- `lua/` (src/redis/scripts.rs builds the library). It is loaded once per
-- server (FUNCTION LOAD), so its helpers are made once, not on every call.
--
-- This file: the reply codes, the capacity scopes and the per-call state.
-- Every per-tenant function starts with `begin` (50_begin.lua), which
-- sets that state and may answer early:
--
-- KEYS[1]  the tenant's incarnation key, "{<ns>:<tenant>}:inc"; every other
--          key a function touches carries the same hash tag, so the whole
--          call runs in one Cluster slot.
-- ARGV[1]  the store incarnation the client believes in (16 hex digits)
-- ARGV[2]  "r": use the tenant's keyspace only if it is of that incarnation;
--          "c": the client has just checked the incarnation against the
--          store's meta key, so create (or replace) the tenant's record;
--          "l": the same, for a tenant whose record the incarnation had
--          made before (its slot lost it: `meta.lua`);
--          followed by the calling handle's origin (hex), which the
--          removal events it causes carry, and, for a call on something
--          an earlier call issued (an id or a fence), '/' and its number;
--          then, for a call that may
--          create records or was given room, after ';', the store-wide
--          ceilings ('' when all are off, else "<letter><limit>" joined by
--          ',', -1 for off) and, after another ';', the room the engine
--          took for this call (`rooms` below)
-- KEYS[2]  on a standalone server only: the ceilings' room key
--          "{<ns>}:room", so the function takes and gives back room itself
-- A function's own arguments start at ARGV[3].
--
-- Replies are arrays whose first element is a code: OK, NOT_FOUND, ...,
-- and the reasons of an INVALID reply (BAD_PAYLOAD, ...), written in from
-- src/redis/reply.rs when the library is built.
@REPLY_CODES@
-- Capacity scopes (src/redis/codes.rs): TENANT_SCOPE, PARENT_SCOPE,
-- CEILING_SCOPE and HOLDER_SCOPE by collection letter, then each
-- mechanism scope by name (S_ENTRIES, Q_JOBS, ...).
@SCOPES@
-- The library is one Lua chunk, which holds at most 200 locals: a
-- mechanism with several helpers keeps them as fields of one table
-- (DECLARED in 65_declared.lua).

-- Per-call state, set by `begin`. Redis runs one call at a time, so these
-- are never shared between calls in flight.
local KEYS, ARGV, TAG, I, NOW_US, NOW, R, GRAVES, REVOKED_BELOW, REVOKED_UNTIL
local LEASES, LOCKS, IDEM, LISTINGS, ATTEMPTS, REPLAY, MEMBERS, MEMBER_KEYS
-- The tenant's leases by id (every score 0, members `lease_member`'s), for
-- paging in id order; LEASES orders them by deadline. TOMBS: its revoked
-- leases' tombstones by their end, of the incarnation (they outlive a
-- tenant revocation, as in memory), each announced as it ends.
local LEASE_IDS, TOMBS
local ORIGIN, EVENTS, DUE, K, STREAMS, QUEUES, SCHEDULES
local LIMITS, ROOM_KEY, GRANTS, EXTENDED, NEEDS, FREED
-- The removal a cascade in progress started ({cause, collection, id}), or
-- nil: the root its cascaded removals announce.
local ROOT
