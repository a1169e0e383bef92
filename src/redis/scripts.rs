//! The engine's Lua scripts, each the shared prelude followed by one
//! transition (`lua/*.lua`). `redis::Script` sends them by SHA (EVALSHA)
//! and loads them on a server that does not have them yet.

use redis::Script;
use std::sync::LazyLock;

macro_rules! tenant_script {
    ($name:ident, $file:literal) => {
        pub(super) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!(
                include_str!("lua/prelude.lua"),
                include_str!(concat!("lua/", $file))
            ))
        });
    };
}

/// Reads or creates the store's incarnation (the meta key; not per tenant).
pub(super) static META: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/meta.lua")));

tenant_script!(GRANT, "grant.lua");
tenant_script!(RENEW, "renew.lua");
tenant_script!(GET_LEASE, "get_lease.lua");
tenant_script!(REVOKE, "revoke.lua");
tenant_script!(TRY_LOCK, "try_lock.lua");
tenant_script!(GET_LOCK, "get_lock.lua");
tenant_script!(RENEW_LOCK, "renew_lock.lua");
tenant_script!(RELEASE_LOCK, "release_lock.lua");
tenant_script!(PUBLISH, "publish.lua");
tenant_script!(GET_LISTING, "get_listing.lua");
tenant_script!(UPDATE_LISTING, "update_listing.lua");
tenant_script!(UNPUBLISH, "unpublish.lua");
tenant_script!(LIST_LISTINGS, "list_listings.lua");
tenant_script!(BEGIN_JOIN, "begin_join.lua");
tenant_script!(BIND, "bind.lua");
tenant_script!(CONSUME, "consume.lua");
tenant_script!(CANCEL_JOIN, "cancel_join.lua");
tenant_script!(HEARTBEAT, "heartbeat.lua");
tenant_script!(GET_PRESENCE, "get_presence.lua");
tenant_script!(LEAVE, "leave.lua");
tenant_script!(LIST_PRESENCE, "list_presence.lua");
