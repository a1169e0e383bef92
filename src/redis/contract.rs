//! The Redis engine under the engine contract: [`RelayEngine`],
//! [`WakeEngine`] and [`StreamEngine`] are served by the inherent methods
//! of the same names, which document what this engine adds (server clock,
//! fences from server counters, timeouts).

use super::{RedisEngine, RedisFollower};
use crate::engine::{RelayEngine, StreamEngine, WakeEngine};
use crate::error::Result;
use crate::events::{Collection, Subscription};
use crate::ids::{AttemptId, JoinToken, LeaseId, TenantId};
use crate::store::{
    Admission, Binding, Cursor, EndpointSeen, Health, JoinTicket, LeaseGrant, LeaseInfo,
    ListingInfo, LockInfo, Page, PresenceInfo, Renewal,
};
use crate::stream::{StreamConfig, StreamInfo, StreamRead};
use crate::wake::Listener;
use std::net::SocketAddr;
use std::time::Duration;

/// Each contract method calls the inherent method of the same name.
macro_rules! serve {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(async fn $name(&self, $($arg: $ty),*) -> $out {
            RedisEngine::$name(self, $($arg),*).await
        })*
    };
}

impl RelayEngine for RedisEngine {
    type Events = Subscription;

    serve! {
        grant(tenant: TenantId, holder: &str, ttl: Duration, key: Option<&str>) -> Result<LeaseGrant>;
        renew(tenant: TenantId, id: LeaseId, ttl: Duration) -> Result<Renewal>;
        renew_at(tenant: TenantId, id: LeaseId, ttl: Duration, version: u64) -> Result<Renewal>;
        get_lease(tenant: TenantId, id: LeaseId) -> Result<LeaseInfo>;
        revoke(tenant: TenantId, id: LeaseId) -> Result<()>;
        observe_endpoint(tenant: TenantId, lease: LeaseId, addr: SocketAddr) -> Result<()>;
        endpoints(tenant: TenantId, lease: LeaseId) -> Result<Vec<EndpointSeen>>;
        publish(tenant: TenantId, lease: LeaseId, k: &str, attrs: &[u8], key: Option<&str>) -> Result<ListingInfo>;
        get_listing(tenant: TenantId, key: &str) -> Result<ListingInfo>;
        update_listing(tenant: TenantId, key: &str, expected: u64, attrs: &[u8]) -> Result<u64>;
        unpublish(tenant: TenantId, key: &str, expected: Option<u64>) -> Result<()>;
        revoke_listing(tenant: TenantId, key: &str) -> Result<()>;
        list_listings(tenant: TenantId, cursor: Option<&Cursor>, limit: usize) -> Result<Page<ListingInfo>>;
        heartbeat(tenant: TenantId, member: &str, ttl: Duration, attrs: Option<&[u8]>, lease: Option<LeaseId>) -> Result<Renewal>;
        get_presence(tenant: TenantId, member: &str) -> Result<PresenceInfo>;
        list_presence(tenant: TenantId, cursor: Option<&Cursor>, limit: usize) -> Result<Page<PresenceInfo>>;
        leave(tenant: TenantId, member: &str) -> Result<()>;
        begin_join(tenant: TenantId, listing: &str, client: &str, ttl: Duration, key: Option<&str>) -> Result<JoinTicket>;
        bind_endpoint(tenant: TenantId, attempt: AttemptId, token: &JoinToken, observed: SocketAddr) -> Result<Binding>;
        consume(tenant: TenantId, token: &JoinToken) -> Result<Admission>;
        cancel_join(tenant: TenantId, attempt: AttemptId) -> Result<()>;
        try_lock(tenant: TenantId, name: &str, owner: &str, ttl: Duration, lease: Option<LeaseId>) -> Result<Option<LockInfo>>;
        get_lock(tenant: TenantId, name: &str) -> Result<LockInfo>;
        renew_lock(tenant: TenantId, name: &str, fence: u64, ttl: Duration) -> Result<Renewal>;
        release_lock(tenant: TenantId, name: &str, fence: u64) -> Result<()>;
        revoke_tenant(tenant: TenantId) -> Result<()>;
        health() -> Health;
        begin_drain(window: Duration) -> Result<Duration>;
        subscribe() -> Result<Subscription>;
        subscribe_to(collections: &[Collection]) -> Result<Subscription>;
    }
}

impl WakeEngine for RedisEngine {
    type Listener = Listener;

    serve! {
        notify(tenant: TenantId, channel: &str) -> Result<()>;
        listen(tenant: TenantId, channel: &str) -> Result<Listener>;
    }
}

impl StreamEngine for RedisEngine {
    type Follower = RedisFollower;

    serve! {
        create_stream(tenant: TenantId, name: &str, config: StreamConfig) -> Result<()>;
        delete_stream(tenant: TenantId, name: &str) -> Result<()>;
        append(tenant: TenantId, name: &str, payload: &[u8]) -> Result<u64>;
        read_stream(tenant: TenantId, name: &str, from: u64, max: usize) -> Result<StreamRead>;
        trim_stream(tenant: TenantId, name: &str, before: u64) -> Result<u64>;
        commit(tenant: TenantId, name: &str, consumer: &str, offset: u64) -> Result<()>;
        stream_info(tenant: TenantId, name: &str) -> Result<StreamInfo>;
        committed(tenant: TenantId, name: &str, consumer: &str) -> Result<Option<u64>>;
        follow(tenant: TenantId, name: &str, consumer: &str) -> Result<RedisFollower>;
    }
}
