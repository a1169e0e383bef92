//! The one way an engine serves the contract: each listed operation is the
//! engine's inherent method of the same name, called with the same
//! arguments. An engine lists what it serves so (one line an operation,
//! its signature the trait's, which the compiler holds it to) and writes
//! out only what it serves otherwise.

/// Implements the listed contract methods by the engine's inherent methods
/// of the same names.
///
/// - `ready Engine: ...` for an engine whose inherent methods finish
///   before they return (the in-memory store): the result is handed back
///   as a future that is already complete, so dropping it can cancel
///   nothing.
/// - `async Engine: ...` for an engine whose inherent methods are async
///   (the Redis engine): the method's future is awaited.
macro_rules! forward {
    (ready $engine:ident: $($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(
            fn $name(&self, $($arg: $ty),*) -> impl ::std::future::Future<Output = $out> + Send {
                let by = $crate::contract::forward::Served::served_by(self);
                ::std::future::ready($engine::$name(by, $($arg),*))
            }
        )*
    };
    (async $engine:ident: $($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(
            async fn $name(&self, $($arg: $ty),*) -> $out {
                let by = $crate::contract::forward::Served::served_by(self);
                $engine::$name(by, $($arg),*).await
            }
        )*
    };
}

pub(crate) use forward;

/// What serves an engine's contract methods ([`forward!`]): the engine
/// itself (the Redis engine), or the handle it wraps (the in-memory
/// engine, [`MemoryEngine`](crate::MemoryEngine), whose methods are its
/// [`Store`](crate::Store)'s).
pub(crate) trait Served {
    /// The type whose inherent methods serve the contract.
    type By;
    /// That value.
    fn served_by(&self) -> &Self::By;
}

/// The contract's operations that every engine serves as its inherent
/// method of the same name, written once: `served!(ready Store)` or
/// `served!(async RedisEngine)` inside the engine's impl of each trait
/// (`relay`, `wake`, `stream`, `queue`: one list per trait). What an
/// engine serves otherwise (the in-memory store's lock and schedule
/// leadership hand back descriptions of the guards it returns, its
/// `claim_wait` is async, the outbox's run takes a handler) it writes out.
macro_rules! served {
    (relay $mode:tt $engine:ident) => {
        $crate::contract::forward::forward! { $mode $engine:
            grant(tenant: $crate::base::ids::TenantId, holder: &str, ttl: ::std::time::Duration, idempotency_key: Option<&str>) -> $crate::base::error::Result<$crate::contract::relay::LeaseGrant>;
            renew(tenant: $crate::base::ids::TenantId, id: $crate::base::ids::LeaseId, ttl: ::std::time::Duration) -> $crate::base::error::Result<$crate::contract::relay::Renewal>;
            renew_at(tenant: $crate::base::ids::TenantId, id: $crate::base::ids::LeaseId, ttl: ::std::time::Duration, version: u64) -> $crate::base::error::Result<$crate::contract::relay::Renewal>;
            get_lease(tenant: $crate::base::ids::TenantId, id: $crate::base::ids::LeaseId) -> $crate::base::error::Result<$crate::contract::relay::LeaseInfo>;
            list_leases(tenant: $crate::base::ids::TenantId, cursor: Option<&$crate::contract::relay::Cursor>, limit: usize) -> $crate::base::error::Result<$crate::contract::relay::Page<$crate::contract::relay::LeaseInfo>>;
            revoke(tenant: $crate::base::ids::TenantId, id: $crate::base::ids::LeaseId) -> $crate::base::error::Result<()>;
            observe_endpoint(tenant: $crate::base::ids::TenantId, lease: $crate::base::ids::LeaseId, addr: ::std::net::SocketAddr) -> $crate::base::error::Result<()>;
            endpoints(tenant: $crate::base::ids::TenantId, lease: $crate::base::ids::LeaseId) -> $crate::base::error::Result<Vec<$crate::contract::relay::EndpointSeen>>;
            publish(tenant: $crate::base::ids::TenantId, lease: $crate::base::ids::LeaseId, key: &str, attrs: &[u8], idempotency_key: Option<&str>) -> $crate::base::error::Result<$crate::contract::relay::ListingInfo>;
            get_listing(tenant: $crate::base::ids::TenantId, key: &str) -> $crate::base::error::Result<$crate::contract::relay::ListingInfo>;
            update_listing(tenant: $crate::base::ids::TenantId, key: &str, expected_version: u64, attrs: &[u8]) -> $crate::base::error::Result<u64>;
            unpublish(tenant: $crate::base::ids::TenantId, key: &str, expected_version: Option<u64>) -> $crate::base::error::Result<()>;
            revoke_listing(tenant: $crate::base::ids::TenantId, key: &str) -> $crate::base::error::Result<()>;
            list_listings(tenant: $crate::base::ids::TenantId, cursor: Option<&$crate::contract::relay::Cursor>, limit: usize) -> $crate::base::error::Result<$crate::contract::relay::Page<$crate::contract::relay::ListingInfo>>;
            heartbeat(tenant: $crate::base::ids::TenantId, member: &str, ttl: ::std::time::Duration, attrs: Option<&[u8]>, lease: Option<$crate::base::ids::LeaseId>) -> $crate::base::error::Result<$crate::contract::relay::Renewal>;
            get_presence(tenant: $crate::base::ids::TenantId, member: &str) -> $crate::base::error::Result<$crate::contract::relay::PresenceInfo>;
            list_presence(tenant: $crate::base::ids::TenantId, cursor: Option<&$crate::contract::relay::Cursor>, limit: usize) -> $crate::base::error::Result<$crate::contract::relay::Page<$crate::contract::relay::PresenceInfo>>;
            leave(tenant: $crate::base::ids::TenantId, member: &str) -> $crate::base::error::Result<()>;
            begin_join(tenant: $crate::base::ids::TenantId, listing: &str, client: &str, ttl: ::std::time::Duration, idempotency_key: Option<&str>) -> $crate::base::error::Result<$crate::contract::relay::JoinTicket>;
            bind_endpoint(tenant: $crate::base::ids::TenantId, attempt: $crate::base::ids::AttemptId, token: &$crate::base::ids::JoinToken, observed: ::std::net::SocketAddr) -> $crate::base::error::Result<$crate::contract::relay::Binding>;
            consume(tenant: $crate::base::ids::TenantId, token: &$crate::base::ids::JoinToken, idempotency_key: Option<&str>) -> $crate::base::error::Result<$crate::contract::relay::Admission>;
            get_attempt(tenant: $crate::base::ids::TenantId, attempt: $crate::base::ids::AttemptId) -> $crate::base::error::Result<$crate::contract::relay::AttemptInfo>;
            cancel_join(tenant: $crate::base::ids::TenantId, attempt: $crate::base::ids::AttemptId) -> $crate::base::error::Result<()>;
            put_record(tenant: $crate::base::ids::TenantId, kind: $crate::base::collection::Kind, lease: $crate::base::ids::LeaseId, name: &str, ttl: ::std::time::Duration, attrs: Option<&[u8]>) -> $crate::base::error::Result<$crate::contract::relay::Renewal>;
            renew_record(tenant: $crate::base::ids::TenantId, kind: $crate::base::collection::Kind, lease: $crate::base::ids::LeaseId, name: &str, ttl: ::std::time::Duration) -> $crate::base::error::Result<$crate::contract::relay::Renewal>;
            get_record(tenant: $crate::base::ids::TenantId, kind: $crate::base::collection::Kind, lease: $crate::base::ids::LeaseId, name: &str) -> $crate::base::error::Result<$crate::contract::relay::RecordInfo>;
            list_records(tenant: $crate::base::ids::TenantId, kind: $crate::base::collection::Kind, lease: $crate::base::ids::LeaseId) -> $crate::base::error::Result<Vec<$crate::contract::relay::RecordInfo>>;
            remove_record(tenant: $crate::base::ids::TenantId, kind: $crate::base::collection::Kind, lease: $crate::base::ids::LeaseId, name: &str) -> $crate::base::error::Result<()>;
            get_lock(tenant: $crate::base::ids::TenantId, name: &str) -> $crate::base::error::Result<$crate::contract::relay::LockInfo>;
            renew_lock(tenant: $crate::base::ids::TenantId, name: &str, fence: u64, ttl: ::std::time::Duration) -> $crate::base::error::Result<$crate::contract::relay::Renewal>;
            release_lock(tenant: $crate::base::ids::TenantId, name: &str, fence: u64) -> $crate::base::error::Result<()>;
            revoke_tenant(tenant: $crate::base::ids::TenantId) -> $crate::base::error::Result<()>;
            health() -> $crate::contract::lifecycle::Health;
            begin_drain(window: ::std::time::Duration) -> $crate::base::error::Result<::std::time::Duration>;
            subscribe() -> $crate::base::error::Result<Self::Events>;
            subscribe_to(collections: &[$crate::contract::events::Collection]) -> $crate::base::error::Result<Self::Events>;
            reconfigure(config: $crate::contract::config::StoreConfig) -> $crate::base::error::Result<()>;
            set_quota_policy(policy: ::std::sync::Arc<dyn $crate::contract::config::QuotaPolicy>) -> ();
        }
    };
    (wake $mode:tt $engine:ident) => {
        $crate::contract::forward::forward! { $mode $engine:
            notify(tenant: $crate::base::ids::TenantId, channel: &str) -> $crate::base::error::Result<()>;
            notify_with(tenant: $crate::base::ids::TenantId, channel: &str, payload: &[u8]) -> $crate::base::error::Result<()>;
            listen(tenant: $crate::base::ids::TenantId, channel: &str) -> $crate::base::error::Result<Self::Listener>;
        }
    };
    (stream $mode:tt $engine:ident) => {
        $crate::contract::forward::forward! { $mode $engine:
            create_stream(tenant: $crate::base::ids::TenantId, name: &str, config: $crate::contract::stream::StreamConfig) -> $crate::base::error::Result<()>;
            delete_stream(tenant: $crate::base::ids::TenantId, name: &str) -> $crate::base::error::Result<()>;
            append(tenant: $crate::base::ids::TenantId, name: &str, payload: &[u8], idempotency_key: Option<&str>) -> $crate::base::error::Result<u64>;
            read_stream(tenant: $crate::base::ids::TenantId, name: &str, from: u64, max: usize) -> $crate::base::error::Result<$crate::contract::stream::StreamRead>;
            trim_stream(tenant: $crate::base::ids::TenantId, name: &str, before: u64) -> $crate::base::error::Result<u64>;
            commit(tenant: $crate::base::ids::TenantId, name: &str, consumer: &str, offset: u64) -> $crate::base::error::Result<()>;
            stream_info(tenant: $crate::base::ids::TenantId, name: &str) -> $crate::base::error::Result<$crate::contract::stream::StreamInfo>;
            committed(tenant: $crate::base::ids::TenantId, name: &str, consumer: &str) -> $crate::base::error::Result<Option<u64>>;
            follow(tenant: $crate::base::ids::TenantId, name: &str, consumer: &str) -> $crate::base::error::Result<Self::Follower>;
            create_group(tenant: $crate::base::ids::TenantId, name: &str, group: &str, config: $crate::contract::group::GroupConfig) -> $crate::base::error::Result<()>;
            delete_group(tenant: $crate::base::ids::TenantId, name: &str, group: &str) -> $crate::base::error::Result<()>;
            read_group(tenant: $crate::base::ids::TenantId, name: &str, group: &str, member: &str, max: usize) -> $crate::base::error::Result<$crate::contract::group::GroupRead>;
            ack_group(tenant: $crate::base::ids::TenantId, name: &str, group: &str, offsets: &[u64]) -> $crate::base::error::Result<usize>;
            claim_idle(tenant: $crate::base::ids::TenantId, name: &str, group: &str, member: &str, min_idle: ::std::time::Duration, max: usize) -> $crate::base::error::Result<$crate::contract::group::Claimed>;
            pending(tenant: $crate::base::ids::TenantId, name: &str, group: &str, from: u64, max: usize) -> $crate::base::error::Result<Vec<$crate::contract::group::PendingEntry>>;
            group_info(tenant: $crate::base::ids::TenantId, name: &str, group: &str) -> $crate::base::error::Result<$crate::contract::group::GroupInfo>;
            join_group(tenant: $crate::base::ids::TenantId, name: &str, group: &str, member: &str) -> $crate::base::error::Result<Self::Member>;
        }
    };
    (queue $mode:tt $engine:ident) => {
        $crate::contract::forward::forward! { $mode $engine:
            create_queue(tenant: $crate::base::ids::TenantId, name: &str, config: $crate::contract::queue::QueueConfig) -> $crate::base::error::Result<()>;
            delete_queue(tenant: $crate::base::ids::TenantId, name: &str) -> $crate::base::error::Result<()>;
            enqueue(tenant: $crate::base::ids::TenantId, queue: &str, payload: &[u8], options: $crate::contract::queue::JobOptions) -> $crate::base::error::Result<$crate::base::ids::JobId>;
            enqueue_batch(tenant: $crate::base::ids::TenantId, queue: &str, payloads: &[&[u8]], options: $crate::contract::queue::JobOptions) -> $crate::base::error::Result<Vec<$crate::base::ids::JobId>>;
            claim(tenant: $crate::base::ids::TenantId, queue: &str, worker: &str, visibility: Option<::std::time::Duration>, max_jobs: usize) -> $crate::base::error::Result<Vec<$crate::contract::queue::ClaimedJob>>;
            ack(tenant: $crate::base::ids::TenantId, queue: &str, job: $crate::base::ids::JobId, claim: $crate::contract::queue::ClaimToken) -> $crate::base::error::Result<()>;
            cancel_job(tenant: $crate::base::ids::TenantId, queue: &str, job: $crate::base::ids::JobId) -> $crate::base::error::Result<()>;
            ack_batch(tenant: $crate::base::ids::TenantId, queue: &str, acks: &[($crate::base::ids::JobId, $crate::contract::queue::ClaimToken)]) -> $crate::base::error::Result<Vec<$crate::base::error::Result<()>>>;
            extend_claim(tenant: $crate::base::ids::TenantId, queue: &str, job: $crate::base::ids::JobId, claim: $crate::contract::queue::ClaimToken, visibility: Option<::std::time::Duration>) -> $crate::base::error::Result<::std::time::Duration>;
            snooze(tenant: $crate::base::ids::TenantId, queue: &str, job: $crate::base::ids::JobId, claim: $crate::contract::queue::ClaimToken, delay: ::std::time::Duration) -> $crate::base::error::Result<()>;
            fail(tenant: $crate::base::ids::TenantId, queue: &str, job: $crate::base::ids::JobId, claim: $crate::contract::queue::ClaimToken, reason: &str) -> $crate::base::error::Result<$crate::contract::queue::Failed>;
            job(tenant: $crate::base::ids::TenantId, queue: &str, job: $crate::base::ids::JobId) -> $crate::base::error::Result<$crate::contract::queue::JobInfo>;
            queue_info(tenant: $crate::base::ids::TenantId, queue: &str) -> $crate::base::error::Result<$crate::contract::queue::QueueInfo>;
            dead_letters(tenant: $crate::base::ids::TenantId, queue: &str, after: Option<$crate::base::ids::JobId>, max: usize) -> $crate::base::error::Result<Vec<$crate::contract::queue::DeadLetter>>;
            requeue_dead(tenant: $crate::base::ids::TenantId, queue: &str, job: $crate::base::ids::JobId) -> $crate::base::error::Result<()>;
            purge_dead(tenant: $crate::base::ids::TenantId, queue: &str) -> $crate::base::error::Result<usize>;
            outbox_put(tenant: $crate::base::ids::TenantId, topic: &str, payload: &[u8], idempotency_key: Option<&str>) -> $crate::base::error::Result<$crate::base::ids::JobId>;
            schedule(tenant: $crate::base::ids::TenantId, name: &str, spec: &str, queue: &str, payload: &[u8]) -> $crate::base::error::Result<()>;
            unschedule(tenant: $crate::base::ids::TenantId, name: &str) -> $crate::base::error::Result<()>;
            commit_tx(batch: $crate::contract::tx::TxBatch) -> $crate::base::error::Result<$crate::contract::tx::TxOutcome>;
        }
    };
}

pub(crate) use served;
