//! The engine's server-side code: one Redis Functions library
//! (`FUNCTION LOAD`), the shared part `lua/prelude.lua` followed by one
//! registered function per transition, each body in its own `lua/*.lua`.
//! A library is loaded once per server, so the helpers it defines are made
//! once rather than on every call (as a script sent by `EVALSHA` would).
//!
//! The library's name carries a hash of its code, and so do its
//! functions' names, so relay instances running different versions of this
//! crate each call their own code on a shared Redis.

use std::sync::LazyLock;

/// One registered function: an index into [`FUNCTIONS`].
#[derive(Copy, Clone)]
pub(super) struct Function(usize);

/// What a function is: per tenant (run inside `begin` and `finish`) or
/// not, and whether it may write.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    /// On the meta slot.
    Meta,
    /// Per tenant, and it may write (and so take or give back room under
    /// the store-wide ceilings).
    Tenant,
    /// Per tenant, reads only: flagged `no-writes`, so Redis runs it on a
    /// server at `maxmemory`.
    Read,
    /// Per tenant, a removal: it frees more than it writes, so it is
    /// flagged `allow-oom` and runs on a server at `maxmemory`, where a
    /// relay frees memory by revoking.
    Frees,
}
use Kind::{Frees, Meta, Read, Tenant};

macro_rules! functions {
    ($($name:ident = $op:literal, $file:literal, $kind:expr;)*) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        enum Index { $($name),* }
        $(pub(super) const $name: Function = Function(Index::$name as usize);)*
        /// (operation, body, kind) of every function.
        const FUNCTIONS: &[(&str, &str, Kind)] = &[
            $(($op, include_str!(concat!("lua/", $file)), $kind)),*
        ];
    };
}

functions! {
    META = "meta", "meta.lua", Meta;
    GRANT = "grant", "grant.lua", Tenant;
    RENEW = "renew", "renew.lua", Tenant;
    GET_LEASE = "get_lease", "get_lease.lua", Read;
    LIST_LEASES = "list_leases", "list_leases.lua", Read;
    REVOKE = "revoke", "revoke.lua", Frees;
    OBSERVE = "observe", "observe.lua", Tenant;
    ENDPOINTS = "endpoints", "endpoints.lua", Read;
    TRY_LOCK = "try_lock", "try_lock.lua", Tenant;
    GET_LOCK = "get_lock", "get_lock.lua", Read;
    RENEW_LOCK = "renew_lock", "renew_lock.lua", Tenant;
    RELEASE_LOCK = "release_lock", "release_lock.lua", Frees;
    PUBLISH = "publish", "publish.lua", Tenant;
    GET_LISTING = "get_listing", "get_listing.lua", Read;
    UPDATE_LISTING = "update_listing", "update_listing.lua", Tenant;
    UNPUBLISH = "unpublish", "unpublish.lua", Frees;
    LIST_LISTINGS = "list_listings", "list_listings.lua", Read;
    BEGIN_JOIN = "begin_join", "begin_join.lua", Tenant;
    BIND = "bind", "bind.lua", Tenant;
    CONSUME = "consume", "consume.lua", Tenant;
    CANCEL_JOIN = "cancel_join", "cancel_join.lua", Frees;
    GET_ATTEMPT = "get_attempt", "get_attempt.lua", Read;
    HEARTBEAT = "heartbeat", "heartbeat.lua", Tenant;
    GET_PRESENCE = "get_presence", "get_presence.lua", Read;
    LEAVE = "leave", "leave.lua", Frees;
    LIST_PRESENCE = "list_presence", "list_presence.lua", Read;
    REVOKE_TENANT = "revoke_tenant", "revoke_tenant.lua", Tenant;
    SWEEP = "sweep", "sweep.lua", Tenant;
    FORGET = "forget", "forget.lua", Tenant;
    DUE = "due", "due.lua", Meta;
    SWEEPER = "sweeper", "sweeper.lua", Meta;
    ROOM = "room", "room.lua", Meta;
    HOLDS = "holds", "holds.lua", Meta;
    CREATE_STREAM = "create_stream", "create_stream.lua", Tenant;
    DELETE_STREAM = "delete_stream", "delete_stream.lua", Tenant;
    APPEND = "append", "append.lua", Tenant;
    READ_STREAM = "read_stream", "read_stream.lua", Read;
    TRIM_STREAM = "trim_stream", "trim_stream.lua", Tenant;
    COMMIT = "commit", "commit.lua", Tenant;
    STREAM_INFO = "stream_info", "stream_info.lua", Tenant;
    CREATE_GROUP = "create_group", "create_group.lua", Tenant;
    DELETE_GROUP = "delete_group", "delete_group.lua", Tenant;
    READ_GROUP = "read_group", "read_group.lua", Tenant;
    ACK_GROUP = "ack_group", "ack_group.lua", Tenant;
    CLAIM_IDLE = "claim_idle", "claim_idle.lua", Tenant;
    PENDING = "pending", "pending.lua", Read;
    GROUP_INFO = "group_info", "group_info.lua", Read;
    CREATE_QUEUE = "create_queue", "create_queue.lua", Tenant;
    DELETE_QUEUE = "delete_queue", "delete_queue.lua", Tenant;
    ENQUEUE = "enqueue", "enqueue.lua", Tenant;
    CLAIM = "claim", "claim.lua", Tenant;
    EXTEND_CLAIM = "extend_claim", "extend_claim.lua", Tenant;
    SNOOZE = "snooze", "snooze.lua", Tenant;
    ACK = "ack", "ack.lua", Tenant;
    ACK_BATCH = "ack_batch", "ack_batch.lua", Tenant;
    CANCEL_JOB = "cancel_job", "cancel_job.lua", Frees;
    FAIL = "fail", "fail.lua", Tenant;
    JOB = "job", "job.lua", Tenant;
    QUEUE_INFO = "queue_info", "queue_info.lua", Tenant;
    DEAD_LETTERS = "dead_letters", "dead_letters.lua", Tenant;
    REQUEUE_DEAD = "requeue_dead", "requeue_dead.lua", Tenant;
    PURGE_DEAD = "purge_dead", "purge_dead.lua", Tenant;
    SCHEDULE = "schedule", "schedule.lua", Tenant;
    UNSCHEDULE = "unschedule", "unschedule.lua", Tenant;
    SCHEDULES = "schedules", "schedules.lua", Read;
    USAGE = "usage", "usage.lua", Read;
    RUN_SCHEDULES = "run_schedules", "run_schedules.lua", Tenant;
    PROBE = "probe", "probe.lua", Meta;
    WRITABLE = "writable", "writable.lua", Meta;
    TX = "tx", "tx.lua", Tenant;
}

/// The library: its code and the names its functions are called by.
pub(super) struct Library {
    pub(super) code: String,
    names: Vec<String>,
}

impl Function {
    /// The name to `FCALL`.
    pub(super) fn name(self) -> &'static str {
        &LIBRARY.names[self.0]
    }

    /// Whether an authorization rests on its write, so that with
    /// `wait_replicas` set its success waits for the replicas.
    pub(super) fn replicated(self) -> bool {
        [
            GRANT,
            REVOKE,
            REVOKE_TENANT,
            TRY_LOCK,
            RENEW_LOCK,
            BIND,
            CONSUME,
        ]
        .iter()
        .any(|f| f.0 == self.0)
    }

    /// Its operation's name (its body's entry in the library's `OPS`).
    pub(super) fn op(self) -> &'static str {
        FUNCTIONS[self.0].0
    }

    /// Whether it only reads (so it needs nothing outside its slot).
    pub(super) fn reads_only(self) -> bool {
        FUNCTIONS[self.0].2 == Read
    }
}

const NAME: &str = "@LIBRARY@";

pub(super) static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let mut code = include_str!("lua/prelude.lua")
        .replace("@LAPSED@", crate::contract::names::LAPSED)
        .replace("@EVENT_LETTERS@", &super::codes::event_letters_lua())
        .replace("@SCOPES@", &super::codes::scopes_lua());
    // A per-tenant body is an entry of `OPS`, so that a transaction
    // (`lua/tx.lua`) runs several in one call.
    for (op, body, kind) in FUNCTIONS {
        if *kind != Meta {
            code.push_str(&format!("\nOPS['{op}'] = function()\n{body}end\n"));
        }
    }
    for (op, body, kind) in FUNCTIONS {
        // A per-tenant body runs inside `begin` and `finish` (the reply
        // and the removal events it caused); the others as they are.
        let wrapped = if *kind != Meta {
            format!(
                "  local early = begin(keys, args)\n  if early then\n    return {{early}}\n  end\n  \
                 return finish(OPS['{op}']())\n"
            )
        } else {
            format!("  KEYS, ARGV, JOURNAL, DEFERRED = keys, args, nil, nil\n{body}")
        };
        // A function that only reads is flagged `no-writes` (Redis refuses
        // any write in it), a removal `allow-oom`: Redis runs both on a
        // server at `maxmemory`, where it refuses every other function.
        let flags = match kind {
            Read => "'no-writes'",
            Frees => "'allow-oom'",
            Meta | Tenant => "",
        };
        code.push_str(&format!(
            "\nredis.register_function{{function_name = '{NAME}_{op}', flags = {{{flags}}}, \
             callback = function(keys, args)\n{wrapped}end}}\n"
        ));
    }
    let library = format!("relaystore_{:016x}", fnv1a(&code));
    Library {
        code: format!("#!lua name={library}\n{}", code.replace(NAME, &library)),
        names: FUNCTIONS
            .iter()
            .map(|(op, _, _)| format!("{library}_{op}"))
            .collect(),
    }
});

/// FNV-1a: a stable hash of the code (the same in every process).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::super::codes::{collection_of, event_letters_lua};
    use super::*;

    /// The library names a collection's room by its letter (`rooms({{'m',
    /// ..}})`, `room.m`): every letter it uses so is one of this table's.
    #[test]
    fn the_library_uses_only_these_letters_for_room() {
        let library = &LIBRARY.code;
        let mut seen = 0;
        for (at, _) in library.match_indices("rooms({{'") {
            let l = library.as_bytes()[at + "rooms({{'".len()];
            assert!(
                collection_of(l).is_some(),
                "rooms() with letter {:?}",
                l as char
            );
            seen += 1;
        }
        for (at, _) in library.match_indices("room.") {
            let l = library.as_bytes()[at + "room.".len()];
            if l.is_ascii_lowercase()
                && !library.as_bytes()[at + "room.".len() + 1].is_ascii_alphanumeric()
            {
                assert!(collection_of(l).is_some(), "room.{}", l as char);
                seen += 1;
            }
        }
        assert!(
            seen >= 8,
            "the library's room letters were not found ({seen})"
        );
        assert!(library.contains(&event_letters_lua()));
    }
}
