//! The engine contract: the one trait relay code is written against.
//!
//! [`RelayEngine`] covers the relay records (leases, listings, presence,
//! join attempts, locks, tenants, health, drain and removal events);
//! [`WakeEngine`] adds wake channels, [`StreamEngine`] streams, and
//! [`Engine`] job queues, the outbox and schedules. The in-memory engine
//! ([`MemoryEngine`](crate::MemoryEngine), a [`Store`](crate::Store) seen
//! through the contract: `store.engine()`) and the Redis engine (feature
//! `redis`), which keeps the state in a server shared by several relay
//! processes, implement all four (ADR 0030, ADR 0032 to ADR 0034, ADR
//! 0081). Code generic over `E: Engine` runs unchanged on either.
//!
//! Every operation is `async`, because a remote engine does I/O, and every
//! returned future is `Send`, so it can be awaited inside a spawned task on
//! any executor. The futures are **cancel-safe**: dropping one before it
//! completes leaves the operation applied entirely or not at all, never
//! in part. The in-memory engine runs the whole operation when the method
//! is called and returns a future that is already complete; a remote
//! engine's operation runs when its future is first polled.
//!
//! Values crossing the contract are engine-neutral: ids are plain values
//! that carry the issuing store's incarnation and round-trip through text
//! and bytes; time is reported as time remaining (plus a wall-clock expiry
//! on creation), never as a reading of one process's clock. A backend that
//! cannot be reached fails closed with
//! [`Error::BackendUnavailable`](crate::Error::BackendUnavailable).
//!
//! The semantics of each operation, its errors and its limits are those
//! documented on the [`Store`](crate::Store) method of the same name; an
//! engine differs only where the trait says so. `docs/adr/0018-engine-contract.md`
//! explains the shape (one trait, generic rather than `dyn`, no tenant
//! handle).
//!
//! ```
//! use relaystore::{Error, RelayEngine, Store, TenantId};
//! use std::time::Duration;
//!
//! // Relay code, written once against the contract.
//! async fn host_and_admit<E: RelayEngine>(engine: &E, game: TenantId) -> Result<(), Error> {
//!     let lease = engine.grant(game, "host-a", Duration::from_secs(30), None).await?;
//!     engine.publish(game, lease.id, "lobby-1", b"mode=ffa", None).await?;
//!     let ticket = engine
//!         .begin_join(game, "lobby-1", "client-7", Duration::from_secs(10), None)
//!         .await?;
//!     let seen = "203.0.113.9:4000".parse().unwrap();
//!     engine.bind_endpoint(game, ticket.attempt, &ticket.token, seen).await?;
//!     engine.consume(game, &ticket.token, None).await?;
//!     assert_eq!(engine.consume(game, &ticket.token, None).await, Err(Error::ReplayRejected));
//!     Ok(())
//! }
//!
//! // The in-memory engine's futures are ready at once: any executor will do.
//! let store = Store::builder().build()?;
//! let engine = store.engine(); // the contract's face of the same store
//! let mut task = std::pin::pin!(host_and_admit(&engine, TenantId(1)));
//! let waker = std::task::Waker::noop();
//! let done = task.as_mut().poll(&mut std::task::Context::from_waker(waker));
//! assert_eq!(done, std::task::Poll::Ready(Ok(())));
//! # use std::future::Future;
//! # Ok::<(), Error>(())
//! ```

use crate::base::collection::Kind;
use crate::base::error::Result;
use crate::base::ids::JobId;
use crate::base::ids::{AttemptId, JoinToken, LeaseId, TenantId};
use crate::contract::config::{QuotaPolicy, StoreConfig};
use crate::contract::events::{Collection, Received, RecvError};
use crate::contract::group::{Claimed, GroupConfig, GroupInfo, GroupRead, PendingEntry};
use crate::contract::lifecycle::Health;
use crate::contract::outbox::{OutboxMessage, OutboxRun};
use crate::contract::queue::DeadLetter;
use crate::contract::queue::{
    ClaimToken, ClaimedJob, Failed, JobInfo, JobOptions, QueueConfig, QueueInfo,
};
use crate::contract::relay::{
    Admission, AttemptInfo, Binding, Cursor, EndpointSeen, JoinTicket, LeaseGrant, LeaseInfo,
    ListingInfo, LockInfo, Page, PresenceInfo, RecordInfo, Renewal,
};
use crate::contract::schedule::{ScheduleInfo, ScheduleRun};
use crate::contract::stream::{StreamConfig, StreamInfo, StreamRead};
use crate::contract::wake::Wake;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

/// The relay records: leases, endpoints, listings, presence, join
/// attempts, locks, tenant revocation, readiness, drain and removal
/// events, engine-neutral and async. Every engine serves these (ADR 0030).
///
/// An engine is a cheap `Clone` handle that can be shared across threads
/// and tasks. Operations are grouped below as leases, listings, presence,
/// joins, records of declared kinds, locks, and tenants; each is documented in full on the
/// [`Store`](crate::Store) method of the same name. Relay code that needs
/// nothing else is written against `E: RelayEngine` and runs on every
/// engine.
pub trait RelayEngine: Clone + Send + Sync + 'static {
    /// The engine's subscription to removal events.
    type Events: Events;

    // ----- leases -----

    /// Grants a lease to `holder` for `ttl` ([`Store::grant`](crate::Store::grant)).
    fn grant(
        &self,
        tenant: TenantId,
        holder: &str,
        ttl: Duration,
        idempotency_key: Option<&str>,
    ) -> impl Future<Output = Result<LeaseGrant>> + Send;

    /// Resets a lease's deadline to now + `ttl` ([`Store::renew`](crate::Store::renew)).
    fn renew(
        &self,
        tenant: TenantId,
        id: LeaseId,
        ttl: Duration,
    ) -> impl Future<Output = Result<Renewal>> + Send;

    /// [`renew`](Self::renew), only if the lease is still at `version`.
    fn renew_at(
        &self,
        tenant: TenantId,
        id: LeaseId,
        ttl: Duration,
        version: u64,
    ) -> impl Future<Output = Result<Renewal>> + Send;

    /// A live lease ([`Store::get_lease`](crate::Store::get_lease)).
    fn get_lease(
        &self,
        tenant: TenantId,
        id: LeaseId,
    ) -> impl Future<Output = Result<LeaseInfo>> + Send;

    /// One page of a tenant's visible leases, in an order fixed by the
    /// engine; pass the returned cursor back for the next page
    /// ([`Store::list_leases`](crate::Store::list_leases)). A lease visible
    /// for the whole scan comes exactly once; a page may hold fewer than
    /// `limit` leases with `next` set.
    fn list_leases(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> impl Future<Output = Result<Page<LeaseInfo>>> + Send;

    /// Revokes a lease and, in the same step, everything attached to it
    /// ([`Store::revoke`](crate::Store::revoke)).
    fn revoke(&self, tenant: TenantId, id: LeaseId) -> impl Future<Output = Result<()>> + Send;

    /// Records a public endpoint observed for a lease's holder
    /// ([`Store::observe_endpoint`](crate::Store::observe_endpoint)).
    fn observe_endpoint(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        addr: SocketAddr,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The endpoints observed for a lease, most recent first.
    fn endpoints(
        &self,
        tenant: TenantId,
        lease: LeaseId,
    ) -> impl Future<Output = Result<Vec<EndpointSeen>>> + Send;

    // ----- listings -----

    /// Publishes a listing attached to a lease ([`Store::publish`](crate::Store::publish)).
    fn publish(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        key: &str,
        attrs: &[u8],
        idempotency_key: Option<&str>,
    ) -> impl Future<Output = Result<ListingInfo>> + Send;

    /// A visible listing.
    fn get_listing(
        &self,
        tenant: TenantId,
        key: &str,
    ) -> impl Future<Output = Result<ListingInfo>> + Send;

    /// Replaces a listing's attributes if it is at `expected_version`;
    /// returns the new version.
    fn update_listing(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: u64,
        attrs: &[u8],
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Removes a listing (at `expected_version`, if given).
    fn unpublish(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: Option<u64>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Revokes a listing and its join attempts.
    fn revoke_listing(
        &self,
        tenant: TenantId,
        key: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// One page of a tenant's visible listings; pass the returned cursor
    /// back for the next page. The order is stable for a scan (a listing
    /// live for the whole scan is on exactly one page): key order on
    /// Redis, the records' places in memory.
    fn list_listings(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> impl Future<Output = Result<Page<ListingInfo>>> + Send;

    // ----- presence -----

    /// Creates or refreshes a presence record
    /// ([`Store::heartbeat`](crate::Store::heartbeat)).
    fn heartbeat(
        &self,
        tenant: TenantId,
        member: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
        lease: Option<LeaseId>,
    ) -> impl Future<Output = Result<Renewal>> + Send;

    /// A visible presence record.
    fn get_presence(
        &self,
        tenant: TenantId,
        member: &str,
    ) -> impl Future<Output = Result<PresenceInfo>> + Send;

    /// One page of a tenant's visible presence records, in the order
    /// [`list_listings`](Self::list_listings) pages listings.
    fn list_presence(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> impl Future<Output = Result<Page<PresenceInfo>>> + Send;

    /// Removes a presence record.
    fn leave(&self, tenant: TenantId, member: &str) -> impl Future<Output = Result<()>> + Send;

    // ----- joins -----

    /// Starts a join attempt on a listing and issues its one-time token
    /// ([`Store::begin_join`](crate::Store::begin_join)).
    fn begin_join(
        &self,
        tenant: TenantId,
        listing: &str,
        client: &str,
        ttl: Duration,
        idempotency_key: Option<&str>,
    ) -> impl Future<Output = Result<JoinTicket>> + Send;

    /// Binds the endpoint observed for an attempt, once
    /// ([`Store::bind_endpoint`](crate::Store::bind_endpoint)).
    fn bind_endpoint(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        token: &JoinToken,
        observed: SocketAddr,
    ) -> impl Future<Output = Result<Binding>> + Send;

    /// Admits the token's client, exactly once
    /// ([`Store::consume`](crate::Store::consume)); with an idempotency
    /// key, a repeat of the call that consumed the token returns its
    /// admission again.
    fn consume(
        &self,
        tenant: TenantId,
        token: &JoinToken,
        idempotency_key: Option<&str>,
    ) -> impl Future<Output = Result<Admission>> + Send;

    /// A join attempt's state and time left, pending, bound or consumed
    /// ([`Store::get_attempt`](crate::Store::get_attempt)).
    fn get_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<AttemptInfo>> + Send;

    /// Cancels a pending or bound attempt.
    fn cancel_join(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<()>> + Send;

    // ----- records of declared kinds -----

    /// The kind the engine's configuration declared under `name`
    /// ([`Store::kind`](crate::Store::kind)).
    fn kind(&self, name: &str) -> Result<Kind>;

    /// Creates or renews a record of a declared kind under a lease
    /// ([`Store::put_record`](crate::Store::put_record)).
    fn put_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
    ) -> impl Future<Output = Result<Renewal>> + Send;

    /// Renews a record of a declared kind, keeping its attributes.
    fn renew_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Renewal>> + Send;

    /// A visible record of a declared kind.
    fn get_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
    ) -> impl Future<Output = Result<RecordInfo>> + Send;

    /// A lease's visible records of one declared kind, in the order they
    /// were made.
    fn list_records(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
    ) -> impl Future<Output = Result<Vec<RecordInfo>>> + Send;

    /// Removes a record of a declared kind (cause `Released`).
    fn remove_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    // ----- locks -----

    /// Takes the lock `name` for `owner`, or `None` if another live owner
    /// holds it ([`Store::try_lock`](crate::Store::try_lock)). The contract
    /// hands back the lock's state, not a guard: keep its `fence` and
    /// renew or release with it (a remote engine cannot release on drop).
    fn try_lock(
        &self,
        tenant: TenantId,
        name: &str,
        owner: &str,
        ttl: Duration,
        lease: Option<LeaseId>,
    ) -> impl Future<Output = Result<Option<LockInfo>>> + Send;

    /// The lock `name`, if a live owner holds it.
    fn get_lock(
        &self,
        tenant: TenantId,
        name: &str,
    ) -> impl Future<Output = Result<LockInfo>> + Send;

    /// Renews the lock `name` held with `fence`.
    fn renew_lock(
        &self,
        tenant: TenantId,
        name: &str,
        fence: u64,
        ttl: Duration,
    ) -> impl Future<Output = Result<Renewal>> + Send;

    /// Releases the lock `name` if it is still held with `fence`.
    fn release_lock(
        &self,
        tenant: TenantId,
        name: &str,
        fence: u64,
    ) -> impl Future<Output = Result<()>> + Send;

    // ----- tenants and lifecycle -----

    /// Revokes everything a tenant holds, in one step
    /// ([`Store::revoke_tenant`](crate::Store::revoke_tenant)).
    fn revoke_tenant(&self, tenant: TenantId) -> impl Future<Output = Result<()>> + Send;

    /// The engine's readiness, for a readiness probe.
    fn health(&self) -> impl Future<Output = Health> + Send;

    /// What `tenant` holds against its quotas and per-tenant caps
    /// ([`Store::usage`](crate::Store::usage)).
    fn usage(
        &self,
        tenant: TenantId,
    ) -> impl Future<Output = Result<crate::contract::usage::TenantUsage>> + Send;

    /// Starts draining; returns the time left before the drain ends
    /// ([`Store::begin_drain`](crate::Store::begin_drain)). New records
    /// are refused with `Draining` while existing ones keep working; when
    /// the window ends, the in-memory store revokes what remains and
    /// stops, while an engine whose state is shared by several processes
    /// stops only this handle and revokes nothing (the others go on
    /// serving the state).
    fn begin_drain(&self, window: Duration) -> impl Future<Output = Result<Duration>> + Send;

    /// Resolves once the drain has ended ([`Store::drained`](crate::Store::drained)):
    /// for the in-memory store, when the window has passed and what
    /// remained is revoked; for an engine whose state is shared, when this
    /// handle has stopped. Pending until then, also before any drain
    /// begins.
    fn drained(&self) -> impl Future<Output = ()> + Send;

    // ----- removal events -----

    /// A new subscription to every removal event.
    fn subscribe(&self) -> impl Future<Output = Result<Self::Events>> + Send;

    /// A new subscription to the removal events of `collections` only
    /// ([`Store::subscribe_to`](crate::Store::subscribe_to)).
    fn subscribe_to(
        &self,
        collections: &[Collection],
    ) -> impl Future<Output = Result<Self::Events>> + Send;

    // ----- limits at run time -----

    /// Changes the run-time limits (store-wide ceilings and budgets,
    /// tenant quotas and per-tenant caps, listener and subscriber bounds);
    /// any other field changed is `InvalidConfig`
    /// ([`Store::reconfigure`](crate::Store::reconfigure)). On Redis, a
    /// handle's own: reconfigure every instance alike.
    fn reconfigure(&self, config: StoreConfig) -> impl Future<Output = Result<()>> + Send;

    /// Replaces the quota policy
    /// ([`Store::set_quota_policy`](crate::Store::set_quota_policy)).
    fn set_quota_policy(
        &self,
        policy: std::sync::Arc<dyn QuotaPolicy>,
    ) -> impl Future<Output = ()> + Send;
}

/// The relay records with wake channels: what a relay worker that waits
/// for work (a listing to change, a job to arrive) through wakes needs.
/// The in-memory [`Store`](crate::Store) and the Redis engine implement
/// it; every `E: Engine` has its operations too.
pub trait WakeEngine: RelayEngine {
    /// The engine's listener on a wake channel.
    type Listener: Wakes;

    /// Wakes every listener of `channel` attached before the call
    /// ([`Store::notify`](crate::Store::notify)).
    fn notify(&self, tenant: TenantId, channel: &str) -> impl Future<Output = Result<()>> + Send;

    /// Wakes every listener of `channel` attached before the call, with a
    /// payload ([`Store::notify_with`](crate::Store::notify_with)).
    fn notify_with(
        &self,
        tenant: TenantId,
        channel: &str,
        payload: &[u8],
    ) -> impl Future<Output = Result<()>> + Send;

    /// Attaches a listener to `channel`
    /// ([`Store::listen`](crate::Store::listen)).
    fn listen(
        &self,
        tenant: TenantId,
        channel: &str,
    ) -> impl Future<Output = Result<Self::Listener>> + Send;
}

/// The relay records and wake channels with streams: append-only logs
/// with offsets, retention, committed consumers and followers. The
/// in-memory [`Store`](crate::Store) and the Redis engine implement it;
/// every `E: Engine` has its operations too.
pub trait StreamEngine: WakeEngine {
    /// The engine's stream follower.
    type Follower: Follow;

    /// The engine's member of a consumer group.
    type Member: GroupMember;

    // ----- streams -----

    /// Creates a stream with explicit retention
    /// ([`Store::create_stream`](crate::Store::create_stream)).
    fn create_stream(
        &self,
        tenant: TenantId,
        name: &str,
        config: StreamConfig,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Deletes a stream with its entries and consumers.
    fn delete_stream(
        &self,
        tenant: TenantId,
        name: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Appends an entry; returns its offset
    /// ([`Store::append`](crate::Store::append)); with an idempotency key,
    /// a repeat answers the offset it appended at.
    fn append(
        &self,
        tenant: TenantId,
        name: &str,
        payload: &[u8],
        idempotency_key: Option<&str>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Entries from an offset on ([`Store::read_stream`](crate::Store::read_stream)).
    fn read_stream(
        &self,
        tenant: TenantId,
        name: &str,
        from: u64,
        max: usize,
    ) -> impl Future<Output = Result<StreamRead>> + Send;

    /// Drops the entries below `before`; returns the first offset held.
    fn trim_stream(
        &self,
        tenant: TenantId,
        name: &str,
        before: u64,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Commits a consumer's offset, never backwards
    /// ([`Store::commit`](crate::Store::commit)).
    fn commit(
        &self,
        tenant: TenantId,
        name: &str,
        consumer: &str,
        offset: u64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// What a stream holds: offsets, entries, bytes, consumers
    /// ([`Store::stream_info`](crate::Store::stream_info)).
    fn stream_info(
        &self,
        tenant: TenantId,
        name: &str,
    ) -> impl Future<Output = Result<StreamInfo>> + Send;

    /// A consumer's committed offset, if any.
    fn committed(
        &self,
        tenant: TenantId,
        name: &str,
        consumer: &str,
    ) -> impl Future<Output = Result<Option<u64>>> + Send;

    /// Follows a stream as a consumer, from its committed offset
    /// ([`Store::follow`](crate::Store::follow)).
    fn follow(
        &self,
        tenant: TenantId,
        name: &str,
        consumer: &str,
    ) -> impl Future<Output = Result<Self::Follower>> + Send;

    // ----- consumer groups (contract/group.rs has the rules) -----

    /// Creates a consumer group on a stream
    /// ([`Store::create_group`](crate::Store::create_group)).
    fn create_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        config: GroupConfig,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Deletes a consumer group with its pending list.
    fn delete_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Delivers new entries to a member of the group
    /// ([`Store::read_group`](crate::Store::read_group)).
    fn read_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
        max: usize,
    ) -> impl Future<Output = Result<GroupRead>> + Send;

    /// Acknowledges entries of the group's pending list; returns how many
    /// it held ([`Store::ack_group`](crate::Store::ack_group)).
    fn ack_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        offsets: &[u64],
    ) -> impl Future<Output = Result<usize>> + Send;

    /// Takes over idle pending entries for a member, marking those
    /// delivered `deliveries_max` times dead
    /// ([`Store::claim_idle`](crate::Store::claim_idle)).
    fn claim_idle(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
        min_idle: Duration,
        max: usize,
    ) -> impl Future<Output = Result<Claimed>> + Send;

    /// The group's pending list from an offset on
    /// ([`Store::pending`](crate::Store::pending)).
    fn pending(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        from: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<PendingEntry>>> + Send;

    /// What the group holds ([`Store::group_info`](crate::Store::group_info)).
    fn group_info(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
    ) -> impl Future<Output = Result<GroupInfo>> + Send;

    /// Reads a consumer group as a member, waiting for appends
    /// ([`Store::join_group`](crate::Store::join_group)).
    fn join_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
    ) -> impl Future<Output = Result<Self::Member>> + Send;
}

/// A relay state engine with everything: the relay records
/// ([`RelayEngine`]), wake channels ([`WakeEngine`]) and streams
/// ([`StreamEngine`]), whose operations every `E: Engine` has too, and job
/// queues, the outbox and schedules. The in-memory [`Store`](crate::Store)
/// and the Redis engine implement it.
pub trait Engine: StreamEngine {
    // ----- job queues -----

    /// Creates a job queue ([`Store::create_queue`](crate::Store::create_queue)).
    fn create_queue(
        &self,
        tenant: TenantId,
        name: &str,
        config: QueueConfig,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Deletes a queue with every job in it.
    fn delete_queue(&self, tenant: TenantId, name: &str)
        -> impl Future<Output = Result<()>> + Send;

    /// Enqueues a job; returns its id ([`Store::enqueue`](crate::Store::enqueue)).
    fn enqueue(
        &self,
        tenant: TenantId,
        queue: &str,
        payload: &[u8],
        options: JobOptions,
    ) -> impl Future<Output = Result<JobId>> + Send;

    /// Enqueues several jobs with the same options, all or none
    /// ([`Store::enqueue_batch`](crate::Store::enqueue_batch)).
    fn enqueue_batch(
        &self,
        tenant: TenantId,
        queue: &str,
        payloads: &[&[u8]],
        options: JobOptions,
    ) -> impl Future<Output = Result<Vec<JobId>>> + Send;

    /// Claims ready jobs by priority, oldest first within one
    /// ([`Store::claim`](crate::Store::claim)).
    fn claim(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
    ) -> impl Future<Output = Result<Vec<ClaimedJob>>> + Send;

    /// Claims ready jobs, waiting until there is one (woken, never
    /// polling; [`Store::claim_wait`](crate::Store::claim_wait)). Wrap
    /// it in the executor's timeout.
    fn claim_wait(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
    ) -> impl Future<Output = Result<Vec<ClaimedJob>>> + Send;

    /// Acknowledges a claimed job ([`Store::ack`](crate::Store::ack)).
    fn ack(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Removes a job whatever its state
    /// ([`Store::cancel_job`](crate::Store::cancel_job)).
    fn cancel_job(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Acknowledges several claimed jobs of one queue, each on its own
    /// ([`Store::ack_batch`](crate::Store::ack_batch)).
    fn ack_batch(
        &self,
        tenant: TenantId,
        queue: &str,
        acks: &[(JobId, ClaimToken)],
    ) -> impl Future<Output = Result<Vec<Result<()>>>> + Send;

    /// Extends a live claim: it now lapses `visibility` from now (the
    /// queue's if `None`), its attempt unused
    /// ([`Store::extend_claim`](crate::Store::extend_claim)).
    fn extend_claim(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        visibility: Option<Duration>,
    ) -> impl Future<Output = Result<Duration>> + Send;

    /// Puts a claimed job back, ready after `delay`, its attempt unused
    /// ([`Store::snooze`](crate::Store::snooze)).
    fn snooze(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        delay: Duration,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Fails a claimed job: retry after backoff, or dead letter
    /// ([`Store::fail`](crate::Store::fail)).
    fn fail(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        reason: &str,
    ) -> impl Future<Output = Result<Failed>> + Send;

    /// A job as it is now ([`Store::job`](crate::Store::job)).
    fn job(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
    ) -> impl Future<Output = Result<JobInfo>> + Send;

    /// What a queue holds, by state.
    fn queue_info(
        &self,
        tenant: TenantId,
        queue: &str,
    ) -> impl Future<Output = Result<QueueInfo>> + Send;

    /// Dead letters, oldest first ([`Store::dead_letters`](crate::Store::dead_letters)).
    fn dead_letters(
        &self,
        tenant: TenantId,
        queue: &str,
        after: Option<JobId>,
        max: usize,
    ) -> impl Future<Output = Result<Vec<DeadLetter>>> + Send;

    /// Returns a dead letter to the queue with fresh attempts.
    fn requeue_dead(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Drops every dead letter of a queue; returns how many.
    fn purge_dead(
        &self,
        tenant: TenantId,
        queue: &str,
    ) -> impl Future<Output = Result<usize>> + Send;

    // ----- outbox -----

    /// Puts a message on the tenant's outbox
    /// ([`Store::outbox_put`](crate::Store::outbox_put)); with an
    /// idempotency key, a repeat answers the message it put.
    fn outbox_put(
        &self,
        tenant: TenantId,
        topic: &str,
        payload: &[u8],
        idempotency_key: Option<&str>,
    ) -> impl Future<Output = Result<JobId>> + Send;

    // ----- transactions -----

    /// Commits one tenant's staged changes all or none
    /// ([`TxBatch`](crate::TxBatch), ADR 0069): each is checked as its
    /// plain operation checks it, in staging order, and the first refusal
    /// is the commit's error, with nothing of the batch applied and nobody
    /// woken. Wakes (stream followers, notified listeners, waiting workers)
    /// fire once the whole commit is visible.
    fn commit_tx(
        &self,
        batch: crate::contract::tx::TxBatch,
    ) -> impl Future<Output = Result<crate::contract::tx::TxOutcome>> + Send;

    /// Delivers due outbox messages through `handler`
    /// ([`Store::outbox_run_once`](crate::Store::outbox_run_once)).
    fn outbox_run_once<F, E>(
        &self,
        tenant: TenantId,
        worker: &str,
        max: usize,
        handler: F,
    ) -> impl Future<Output = Result<OutboxRun>> + Send
    where
        F: FnMut(&OutboxMessage) -> std::result::Result<(), E> + Send,
        E: std::fmt::Display;

    // ----- schedules -----

    /// Schedules `@every` fires onto a queue
    /// ([`Store::schedule`](crate::Store::schedule)).
    fn schedule(
        &self,
        tenant: TenantId,
        name: &str,
        spec: &str,
        queue: &str,
        payload: &[u8],
    ) -> impl Future<Output = Result<()>> + Send;

    /// Removes a schedule.
    fn unschedule(&self, tenant: TenantId, name: &str) -> impl Future<Output = Result<()>> + Send;

    /// The tenant's schedules, by name.
    fn schedules(&self, tenant: TenantId)
        -> impl Future<Output = Result<Vec<ScheduleInfo>>> + Send;

    /// Tries to take the tenant's scheduler lock
    /// ([`Store::try_lead_schedules`](crate::Store::try_lead_schedules));
    /// renew it with [`renew_lock`](RelayEngine::renew_lock) under
    /// [`SCHEDULER_LOCK`](crate::SCHEDULER_LOCK).
    fn try_lead_schedules(
        &self,
        tenant: TenantId,
        runner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<LockInfo>>> + Send;

    /// Fires what is due, for the runner holding the scheduler lock with
    /// `fence` ([`Store::run_schedules`](crate::Store::run_schedules)).
    fn run_schedules(
        &self,
        tenant: TenantId,
        fence: u64,
    ) -> impl Future<Output = Result<ScheduleRun>> + Send;
}

/// A consumer following one stream: waits for appends, never polls.
pub trait Follow: Send + 'static {
    /// The offset the next read starts at.
    fn position(&self) -> u64;

    /// Waits for at least one entry from the position on and returns up to
    /// `max`. Cancel-safe: the position moves only with returned entries.
    fn next(&mut self, max: usize) -> impl Future<Output = Result<StreamRead>> + Send;

    /// Commits the position for the follower's consumer.
    fn commit(&self) -> impl Future<Output = Result<()>> + Send;

    /// Moves the position to `offset`: the next read starts there (below
    /// the stream's first offset it answers `Trimmed { first }`, as any
    /// read). Nothing is committed.
    fn seek(&mut self, offset: u64);

    /// Moves the position to the lowest offset the stream still holds (a
    /// follower whose position was trimmed away goes on from there) and
    /// returns it. `NotFound` if the stream is gone.
    fn seek_to_first(&mut self) -> impl Future<Output = Result<u64>> + Send;
}

/// A member of a consumer group, from [`StreamEngine::join_group`]: new
/// entries as they are appended, and the member's acknowledgements and
/// idle claims.
pub trait GroupMember: Send + 'static {
    /// Waits until the group has at least one new entry and delivers up
    /// to `max` to this member (or returns the trimmed offsets it passed
    /// over). `CapacityExceeded` (`StreamGroupPending`) at once while the
    /// group's pending list is full. Cancel-safe: entries are delivered
    /// only when returned.
    fn next(&mut self, max: usize) -> impl Future<Output = Result<GroupRead>> + Send;

    /// Acknowledges `offsets`; returns how many the pending list held.
    fn ack(&self, offsets: &[u64]) -> impl Future<Output = Result<usize>> + Send;

    /// Takes over entries idle for at least `min_idle` for this member.
    fn claim_idle(
        &self,
        min_idle: Duration,
        max: usize,
    ) -> impl Future<Output = Result<Claimed>> + Send;
}

/// A listener on a wake channel: one wake per notify, queued (at most
/// `wake_queue_max`; a full queue drops its oldest and the next wake counts
/// it in [`Wake::missed`]).
pub trait Wakes: Send + Sync + 'static {
    /// The oldest wake queued now, if any, without waiting.
    fn try_recv(&self) -> Option<Wake>;

    /// Waits for the next wake. Cancel-safe: dropping the future consumes
    /// nothing. [`RecvError::Closed`] once the engine has stopped or is
    /// gone and no wake is pending.
    fn recv(&self) -> impl Future<Output = std::result::Result<Wake, RecvError>> + Send;
}

/// A subscription to an engine's removal events: a bounded buffer that
/// reports what it had to drop as [`Received::Lagged`].
pub trait Events: Send + Sync + 'static {
    /// The next buffered event or lag report, without waiting.
    fn try_recv(&self) -> Option<Received>;

    /// Waits for the next event or lag report. Cancel-safe: dropping the
    /// future loses nothing. [`RecvError::Closed`] once the engine has
    /// stopped (its drain ended) or is gone, and the buffer is read.
    fn recv(&self) -> impl Future<Output = std::result::Result<Received, RecvError>> + Send;
}
