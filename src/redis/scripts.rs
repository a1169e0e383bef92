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

macro_rules! functions {
    ($($name:ident = $op:literal, $file:literal, $per_tenant:literal;)*) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        enum Index { $($name),* }
        $(pub(super) const $name: Function = Function(Index::$name as usize);)*
        /// (operation, body, whether it is per tenant) of every function.
        const FUNCTIONS: &[(&str, &str, bool)] = &[
            $(($op, include_str!(concat!("lua/", $file)), $per_tenant)),*
        ];
    };
}

functions! {
    META = "meta", "meta.lua", false;
    GRANT = "grant", "grant.lua", true;
    RENEW = "renew", "renew.lua", true;
    GET_LEASE = "get_lease", "get_lease.lua", true;
    REVOKE = "revoke", "revoke.lua", true;
    OBSERVE = "observe", "observe.lua", true;
    ENDPOINTS = "endpoints", "endpoints.lua", true;
    TRY_LOCK = "try_lock", "try_lock.lua", true;
    GET_LOCK = "get_lock", "get_lock.lua", true;
    RENEW_LOCK = "renew_lock", "renew_lock.lua", true;
    RELEASE_LOCK = "release_lock", "release_lock.lua", true;
    PUBLISH = "publish", "publish.lua", true;
    GET_LISTING = "get_listing", "get_listing.lua", true;
    UPDATE_LISTING = "update_listing", "update_listing.lua", true;
    UNPUBLISH = "unpublish", "unpublish.lua", true;
    LIST_LISTINGS = "list_listings", "list_listings.lua", true;
    BEGIN_JOIN = "begin_join", "begin_join.lua", true;
    BIND = "bind", "bind.lua", true;
    CONSUME = "consume", "consume.lua", true;
    CANCEL_JOIN = "cancel_join", "cancel_join.lua", true;
    HEARTBEAT = "heartbeat", "heartbeat.lua", true;
    GET_PRESENCE = "get_presence", "get_presence.lua", true;
    LEAVE = "leave", "leave.lua", true;
    LIST_PRESENCE = "list_presence", "list_presence.lua", true;
    REVOKE_TENANT = "revoke_tenant", "revoke_tenant.lua", true;
    SWEEP = "sweep", "sweep.lua", true;
    DUE = "due", "due.lua", false;
    SWEEPER = "sweeper", "sweeper.lua", false;
    ROOM = "room", "room.lua", false;
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
}

const NAME: &str = "@LIBRARY@";

pub(super) static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let mut code = String::from(include_str!("lua/prelude.lua"));
    for (op, body, per_tenant) in FUNCTIONS {
        // A per-tenant body runs inside `begin` and `finish` (the reply
        // and the removal events it caused); the others as they are.
        let wrapped = if *per_tenant {
            format!(
                "  local early = begin(keys, args)\n  if early then\n    return {{early}}\n  end\n  \
                 return finish((function()\n{body}  end)())\n"
            )
        } else {
            format!("  KEYS, ARGV = keys, args\n{body}")
        };
        code.push_str(&format!(
            "\nredis.register_function('{NAME}_{op}', function(keys, args)\n{wrapped}end)\n"
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
