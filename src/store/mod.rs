//! [`Store`]: the in-memory engine for a relay's ephemeral state.
//!
//! The store is a set of [`Table`]s (leases, listings, presence, join
//! attempts, tombstones, idempotency records, named locks) sharing one clock, one version
//! counter and one event hub, plus a registry of tenants with their quotas.
//!
//! # Ground rules
//!
//! - **Visibility is validated, removal is indexed.** A record is visible
//!   only if it is live, its tenant's epoch is the one it was created in,
//!   it is *attached*, and every ancestor (listing, lease) is visible too;
//!   every read path checks this. So revoking a lease or a tenant hides
//!   everything under it in one step. Physical removal follows through the
//!   parent's bounded index of children, synchronously, before revoke
//!   returns.
//! - **Attach before visible.** A child is inserted unattached (invisible),
//!   then registered in its parent's index under the parent's shard lock,
//!   then marked attached. Revoke removes the parent under the same lock, so
//!   a child either is in the index the revoke collects, or finds the parent
//!   gone and rolls back. No orphan is ever visible.
//! - **Who owns the counters.** Until a record is marked attached, its tenant
//!   counters belong to the operation's `Reservation` (released on failure,
//!   also on panic); once attached, they belong to the record and are
//!   released exactly once, by whichever path removes it. Table ceilings are
//!   released by the table.
//! - **No nested map calls.** Store code never calls a table from inside a
//!   table closure. Cross-table steps run one after another, and each step
//!   re-checks what it depends on.
//! - **Events after the fact.** Events are emitted after the removal, never
//!   under a lock. Records that were never visible (rolled back) emit none.

#[cfg(any(test, feature = "internals"))]
mod audit;
mod builder;
mod contract;
pub use contract::MemoryEngine;
mod kinds;
mod lifecycle;
mod mechanisms;
mod observe;
mod protocol;
mod reconfigure;
mod tenant;
mod usage;

#[cfg(any(test, feature = "internals"))]
pub use audit::AuditError;
pub use builder::{StoreBuilder, EXPIRY_TICK_DEFAULT};
pub use kinds::lease::LEASE_SLOTS_PER_ITEM;
pub use kinds::lock::LockGuard;
pub use mechanisms::groups::Member;
pub use mechanisms::schedules::{Scheduler, SchedulerStop};
pub use mechanisms::streams::Follower;
pub use mechanisms::tx::{Committed, Transaction, TX_OPS_MAX};
pub use observe::REFUSAL_LOG_INTERVAL;

// The contract's values, for the engine's own files (`super::Health`).
use crate::contract::relay::{LockInfo, Renewal};
use crate::contract::usage::Usage;

use crate::base::attrs::Attrs;
use crate::base::error::{Error, Result, Scope};
use crate::base::ids::{AttemptId, LeaseId, TenantId};

use crate::base::name::Name;
use crate::base::secrets::random_bytes;
use crate::base::sync::{Arc, AtomicBool, AtomicU64, Ordering, Snapshot};
use crate::base::time::{Clock, MonoTime};
use crate::base::words::LimitSnapshot;
use crate::contract::config::{Limits, QuotaPolicy, StoreConfig, UniformQuota};
use crate::contract::events::{Cause, Collection, Event, RecordId};
use crate::contract::rules::QueueLimits;
use crate::contract::rules::ScheduleLimits;
use crate::contract::rules::StreamLimits;
use crate::contract::rules::TtlRange;
use crate::coord::queue::QueueHub;
use crate::coord::schedule::ScheduleHub;
use crate::coord::stream::StreamHub;
use crate::mem::events::{EventHub, Subscription};
use crate::mem::gate::{Gate, Inside};
use crate::mem::latch::Latch;
use crate::mem::named_slab::NamedTable;
use crate::mem::quota::Counter;
use crate::mem::record::{Stamp, Versions};
use crate::mem::shard::ShardMap;
use crate::mem::table::{SlabTable, Storage, Table, TableOf};
use crate::mem::wake::WakeHub;
use kinds::idempotency::Idem;
use kinds::join::Attempt;
use kinds::lease::{Lease, LeaseWords};
use kinds::listing::{Listing, ListingWords};
use kinds::lock::Lock;
use kinds::presence::{Presence, PresenceWords};
use kinds::record::{Declared, DeclaredWords, RecordKey};
use protocol::name_key::{NameKey, NameLookup};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tenant::{Epoch, Revocations};

// A renewal as the in-memory engine takes it from a record's stamp.
impl Renewal {
    pub(crate) fn of(stamp: Stamp, now: MonoTime) -> Self {
        Renewal {
            version: stamp.version,
            remaining: stamp.remaining(now),
        }
    }
}

/// Leases and attempts are keyed by their id's sequence alone (unique in
/// the store: it names the record's slab slot and the slot's
/// generation); the tenant is in the record, and every access by id
/// checks it, so another tenant's record answers exactly like a missing
/// one. Half the key of
/// `(tenant, seq)`, in the table and in every wheel entry.
type IdKey = u64;

/// The record kinds a lease keeps by place, in the order its cascade
/// removes them. A kind's position is its run in a lease's list of
/// places; its cascade and its audit come from its [`protocol::attach::OnLease`]
/// implementation.
const ON_LEASE: [protocol::attach::OnLeaseKind; 4] = [
    protocol::attach::OnLeaseKind::of::<Listing>(),
    protocol::attach::OnLeaseKind::of::<Presence>(),
    protocol::attach::OnLeaseKind::of::<Lock>(),
    protocol::attach::OnLeaseKind::of::<Declared>(),
];

/// Counts of records held, per collection (live or awaiting the sweep).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Leases held.
    pub leases: usize,
    /// Listings held.
    pub listings: usize,
    /// Presence records held.
    pub presence: usize,
    /// Records of the declared kinds held, every kind together.
    pub records: usize,
    /// Attempt records held, including remembered consumed tokens.
    pub attempts: usize,
    /// Pending or bound attempts admitted.
    pub attempts_pending: u64,
    /// Tombstones held.
    pub tombstones: usize,
    /// Idempotency records held.
    pub idempotency: usize,
    /// Named locks held.
    pub locks: usize,
    /// Tenants registered: those holding a record or with a creation in
    /// flight (a tenant with nothing left is forgotten).
    pub tenants: usize,
}

/// The in-memory relay state store: a cheap `Clone` handle (one pointer);
/// every clone is the same store, so a handle can move into each thread or
/// task that serves relay traffic.
///
/// ```
/// use relaystore::{time::ManualClock, Store, StoreConfig, TenantId};
/// use std::{sync::Arc, time::Duration};
///
/// let clock = Arc::new(ManualClock::new());
/// let store = Store::new(StoreConfig::default(), clock.clone())?;
/// let game = TenantId(1);
///
/// let lease = store.grant(game, "host-a", Duration::from_secs(30), None)?;
/// store.publish(game, lease.id, "lobby-1", b"mode=ffa", None)?;
/// let ticket = store.begin_join(game, "lobby-1", "client-7", Duration::from_secs(10), None)?;
/// store.bind_endpoint(game, ticket.attempt, &ticket.token, "203.0.113.9:4000".parse().unwrap())?;
/// let admitted = store.consume(game, &ticket.token, None)?;
/// assert_eq!(admitted.client.as_ref(), "client-7");
/// assert_eq!(store.consume(game, &ticket.token, None), Err(relaystore::Error::ReplayRejected));
///
/// store.revoke(game, lease.id)?; // the listing goes with it
/// assert_eq!(store.get_listing(game, "lobby-1"), Err(relaystore::Error::NotFound));
/// # Ok::<(), relaystore::Error>(())
/// ```
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

/// Everything one store holds; every [`Store`] handle points at one.
pub(crate) struct Shared {
    config: StoreConfig,
    clock: Arc<dyn Clock>,
    incarnation: u64,
    /// This store among those the process made: threads remember their
    /// last tenant hold per store by it (`tenant::LastHeld`).
    instance: u64,
    /// Every fence this incarnation issues is at least this (see
    /// [`fence_floor`](Self::fence_floor)).
    fence_floor: u64,
    /// The store-wide sequence job ids are drawn from (starting at the
    /// fence floor). Fences and publications are versions instead.
    seqs: AtomicU64,
    /// Each tenant's current epoch.
    tenants: ShardMap<TenantId, Arc<Epoch>>,
    tenant_count: Counter,
    leases: SlabTable<Lease, LeaseWords>,
    /// Tenant revocations, counted for reads that take no lock.
    revocations: Revocations,
    /// Revoked leases' sequence numbers, with their tenant.
    tombstones: Table<IdKey, TenantId>,
    listings: NamedTable<NameKey, Listing, ListingWords>,
    presence: NamedTable<NameKey, Presence, PresenceWords>,
    /// Records of the declared kinds, every kind in one table; boxed, so
    /// the store is built within a model thread's 32 KiB stack.
    records: Box<NamedTable<RecordKey, Declared, DeclaredWords>>,
    /// Each declared kind's store-wide counter, in the kinds' order.
    kind_ceilings: Box<[Counter]>,
    attempts: SlabTable<Attempt>,
    pending: Counter,
    idempotency: NamedTable<NameKey, Idem>,
    locks: NamedTable<NameKey, Lock>,
    events: Arc<EventHub>,
    wakes: Arc<WakeHub>,
    streams: StreamHub,
    queues: QueueHub,
    schedules: ScheduleHub,
    /// What a commit closes (`crate::mem::gate`): every mutation of the
    /// collections a transaction writes enters it, and their reads
    /// check it.
    gate: Gate,
    ttl: TtlRange,
    /// Where tenants' quotas come from; replaced whole by
    /// `set_quota_policy`.
    policy: Snapshot<Arc<dyn QuotaPolicy>>,
    /// The limits changed at run time (`reconfigure`), read whole by each
    /// admission.
    limits: Arc<LimitSnapshot<Limits>>,
    /// Serialises reconfigurations (never taken by an operation).
    reconfiguring: std::sync::Mutex<()>,
    /// The configuration in force (`Store::config`): `config` with the
    /// run-time changes applied. Operations read fixed fields from
    /// `config`.
    config_now: Snapshot<StoreConfig>,
    state: AtomicU64,
    drain_deadline_ms: AtomicU64,
    /// Opens when a drain has ended and its revocations are done.
    drained: Latch,
    /// Held by the sweep that carries out the end of a drain, so one does.
    ending: AtomicBool,
    /// What the store reports through `tracing`.
    observe: observe::Observe,
    /// The stop signal of the background expiry driver the builder
    /// started, if any; raised when the last handle goes.
    #[cfg(feature = "native")]
    driver: std::sync::Mutex<Option<builder::DriverStop>>,
}

impl Store {
    /// A store with `config`'s limits on `clock`. Draws a random
    /// incarnation from the OS CSPRNG.
    pub fn new(config: StoreConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        let policy = Arc::new(UniformQuota(config.tenant.clone()));
        Self::with_policy(config, clock, policy)
    }

    /// A store whose per-tenant quotas come from `policy` (asked when a
    /// tenant is registered: when it first creates something, and again
    /// after it held nothing and was forgotten) instead of `config.tenant`.
    pub fn with_policy(
        config: StoreConfig,
        clock: Arc<dyn Clock>,
        policy: Arc<dyn QuotaPolicy>,
    ) -> Result<Self> {
        config.validate()?;
        let mut bytes = [0; 8];
        random_bytes(&mut bytes)?;
        let incarnation = u64::from_le_bytes(bytes);
        let start = clock.now();
        let floor = fence_floor(clock.wall(), config.fence_floor);
        let versions = Arc::new(Versions::starting_after(floor));
        let limits = Arc::new(LimitSnapshot::new(Limits::of(&config)));
        // Std's atomic in every build: a process-wide count, not shared
        // state a model needs to explore.
        static INSTANCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let instance = INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Made in its `Arc` at once: one copy of the tables on the stack,
        // not two (a model thread's stack is 32 KiB).
        let shared = Arc::new(Shared {
            incarnation,
            instance,
            fence_floor: floor,
            seqs: AtomicU64::new(floor),
            tenants: ShardMap::with_capacity(64),
            tenant_count: Counter::new(Scope::Tenants, config.tenants_max),
            leases: table(&config, Collection::Leases, &versions, start),
            revocations: Revocations::new(),
            tombstones: table(&config, Collection::Tombstones, &versions, start),
            listings: table(&config, Collection::Listings, &versions, start),
            presence: table(&config, Collection::Presence, &versions, start),
            records: Box::new(table(&config, Collection::Records, &versions, start)),
            kind_ceilings: kinds::record::kind_ceilings(&config.kinds),
            attempts: table(&config, Collection::Replay, &versions, start),
            pending: Counter::new(
                Scope::Collection(Collection::Attempts),
                config.ceiling(Collection::Attempts),
            ),
            idempotency: table(&config, Collection::Idempotency, &versions, start),
            locks: table(&config, Collection::Locks, &versions, start),
            events: Arc::new(EventHub::new(
                Arc::clone(&limits),
                config.subscriber_buffer_max,
                crate::contract::metrics::EngineLabel::Memory,
            )),
            wakes: Arc::new(WakeHub::new(Arc::clone(&limits), config.wake_queue_max)),
            streams: StreamHub::new(StreamLimits::of(&config), Arc::clone(&limits), start),
            queues: QueueHub::new(
                QueueLimits::of(&config),
                Arc::clone(&limits),
                start,
                incarnation,
            ),
            schedules: ScheduleHub::new(ScheduleLimits::of(&config), Arc::clone(&limits)),
            gate: Gate::default(),
            ttl: TtlRange::new(config.ttl_min, config.ttl_max)?,
            policy: Snapshot::new(policy),
            limits,
            reconfiguring: std::sync::Mutex::new(()),
            config_now: Snapshot::new(config.clone()),
            state: AtomicU64::new(lifecycle::READY),
            drain_deadline_ms: AtomicU64::new(u64::MAX),
            drained: Latch::new(),
            ending: AtomicBool::new(false),
            observe: observe::Observe::new(),
            #[cfg(feature = "native")]
            driver: std::sync::Mutex::new(None),
            clock,
            config,
        });
        crate::contract::metrics::announce(crate::contract::metrics::EngineLabel::Memory);
        tracing::info!(
            incarnation = format_args!("{:016x}", shared.incarnation),
            fence_floor = shared.fence_floor,
            "relaystore store started: a new incarnation; ids and fences from earlier ones answer Restarted",
        );
        Ok(Store { shared })
    }

    /// The lowest fence (lease or lock) this incarnation can issue: the
    /// wall clock at start in nanoseconds since the Unix epoch, or the
    /// configured `fence_floor` if that is higher. Every fence an earlier
    /// incarnation issued is below it as long as that incarnation issued
    /// fewer than one fence per nanosecond on average and the wall clock
    /// did not step back across the restart (the host's floor covers that
    /// case). A fence below it is from an earlier incarnation: `Restarted`.
    pub fn fence_floor(&self) -> u64 {
        self.shared.fence_floor
    }

    /// Subscribes to every removal event. Refused with `CapacityExceeded`
    /// past `subscribers_max`. The subscription ends
    /// ([`RecvError::Closed`](crate::events::RecvError::Closed)) once the
    /// store stops: after a drain, once its `Drained` events are read; on
    /// a stopped store, at once.
    pub fn subscribe(&self) -> Result<Subscription> {
        self.shared.events.subscribe(&Collection::ALL)
    }

    /// Subscribes to the removal events of `collections` only: the others
    /// are never buffered for this subscriber, never count towards its lag
    /// and never wake it. Refused like [`subscribe`](Self::subscribe).
    pub fn subscribe_to(&self, collections: &[Collection]) -> Result<Subscription> {
        self.shared.events.subscribe(collections)
    }

    /// Records held per collection.
    pub fn stats(&self) -> Stats {
        Stats {
            leases: self.shared.leases.len(),
            listings: self.shared.listings.len(),
            presence: self.shared.presence.len(),
            records: self.shared.records.len(),
            attempts: self.shared.attempts.len(),
            attempts_pending: self.shared.pending.used(),
            tombstones: self.shared.tombstones.len(),
            idempotency: self.shared.idempotency.len(),
            locks: self.shared.locks.len(),
            tenants: self.shared.tenants.len(),
        }
    }

    /// The store's clock reading: what every expiry decision compares
    /// against. Time-based state a relay keeps beside the store (a nonce's
    /// expiry) reads it here, so a test's
    /// [`ManualClock`](crate::time::ManualClock) drives both.
    pub fn now(&self) -> MonoTime {
        self.shared.clock.now()
    }

    /// The wall-clock time at which `deadline` falls, for reporting only.
    pub fn expires_at(&self, deadline: MonoTime) -> SystemTime {
        let now = self.shared.clock.now();
        self.shared.clock.wall_at(now) + deadline.saturating_since(now)
    }

    /// How long ago the last sweep ran; large values mean a stalled driver.
    pub fn sweep_lag(&self) -> Duration {
        self.shared
            .clock
            .now()
            .saturating_since(self.leases_swept_to())
    }

    fn leases_swept_to(&self) -> MonoTime {
        self.shared.leases.swept_to()
    }

    /// Physically removes everything that has expired by the store's clock
    /// and cascades removals to children. Returns how many records left.
    ///
    /// A sweep also carries out the end of a drain whose window has
    /// passed: it revokes every remaining lease and presence record (cause
    /// `Drained`), a batch at a time, and then opens
    /// [`drained`](Self::drained).
    pub fn sweep(&self) -> usize {
        let now = self.shared.clock.now();
        self.end_drain(now) + self.sweep_at(now)
    }

    fn sweep_at(&self, now: MonoTime) -> usize {
        let _in = self.enter();
        let span = tracing::debug_span!("relaystore_sweep", removed = tracing::field::Empty);
        let _entered = span.enter();
        #[cfg(feature = "native")]
        let started = std::time::Instant::now();
        let removed = self.sweep_steps(now);
        span.record("removed", removed);
        self.observe_sweep_ran();
        #[cfg(feature = "native")]
        let took = started.elapsed();
        // Without an OS clock the host's clock times the sweep, to its
        // resolution.
        #[cfg(not(feature = "native"))]
        let took = self.shared.clock.now().saturating_since(now);
        crate::contract::metrics::sweep(
            crate::contract::metrics::EngineLabel::Memory,
            took,
            Some(removed),
        );
        self.report_gauges(now);
        removed
    }

    fn sweep_steps(&self, now: MonoTime) -> usize {
        // Parents first, so their children go with them as `Cascaded`.
        let mut n = self.sweep_kind::<Lease>(now)
            + self.sweep_kind::<Presence>(now)
            + self.sweep_kind::<Declared>(now)
            + self.sweep_kind::<Attempt>(now)
            + self.sweep_kind::<Listing>(now);
        // Aged stream entries are not records: they are trimmed, not counted.
        self.shared.streams.sweep(now);
        // Nor are jobs: delays end and lapsed claims return their jobs.
        for woken in self.shared.queues.sweep(now.as_millis()) {
            // A store that stopped has no workers left to wake.
            let _ = self.shared.wakes.notify(&woken);
        }
        let mut tombstones = Vec::new();
        self.shared.tombstones.sweep(now, &mut tombstones);
        for r in tombstones {
            n += 1;
            self.emit(
                Collection::Tombstones,
                r.value,
                RecordId::Lease(self.lease_id(r.key)),
                Cause::Expired,
            );
        }
        n + self.sweep_kind::<Lock>(now) + self.sweep_kind::<Idem>(now)
    }

    /// Sets the gauges (records held per collection, and health) when
    /// health changed or `GAUGE_INTERVAL` passed on the store clock since
    /// they were last set: a sweep runs every tick, a scrape every few
    /// seconds.
    fn report_gauges(&self, now: MonoTime) {
        let health = crate::contract::metrics::health_state(&self.health());
        if !self.shared.observe.gauges_due(now, health) {
            return;
        }
        crate::contract::metrics::health(crate::contract::metrics::EngineLabel::Memory, health);
        let s = &self.shared;
        for c in Collection::ALL {
            let held = match c {
                Collection::Leases => s.leases.len() as u64,
                Collection::Listings => s.listings.len() as u64,
                Collection::Presence => s.presence.len() as u64,
                Collection::Attempts => s.pending.used(),
                Collection::Replay => s.attempts.len() as u64,
                Collection::Idempotency => s.idempotency.len() as u64,
                Collection::Tombstones => s.tombstones.len() as u64,
                Collection::Locks => s.locks.len() as u64,
                Collection::Streams => s.streams.len(),
                Collection::Queues => s.queues.len(),
                Collection::Schedules => s.schedules.len(),
                Collection::Records => s.records.len() as u64,
            };
            crate::contract::metrics::records(
                crate::contract::metrics::EngineLabel::Memory,
                c,
                held,
            );
        }
        let (subscribers, backlog) = s.events.backlog();
        crate::contract::metrics::subscribers(
            crate::contract::metrics::EngineLabel::Memory,
            subscribers,
            backlog,
        );
    }

    // ----- shared helpers ----------------------------------------------------

    /// Enters the commit gate: every mutation of listings, streams, queues
    /// and schedules (and of what cascades into them) runs inside it.
    fn enter(&self) -> Inside<'_> {
        self.shared.gate.enter()
    }

    /// Runs a read of listings, streams, queues or schedules so that it
    /// sees every commit whole or not at all.
    #[inline(always)]
    fn consistent<R>(&self, read: impl FnMut() -> R) -> R {
        self.shared.gate.read(read)
    }

    /// Debug builds: checks that a mutation of the collections a
    /// transaction writes runs inside the gate.
    fn inside_gate(&self) {
        debug_assert!(
            self.shared.gate.entered()
                || crate::base::faults::active(crate::base::faults::StoreFault::TxGateBypassed),
            "a mutation of a transactional collection outside the commit gate"
        );
    }

    fn next_seq(&self) -> u64 {
        self.next_seqs(1)
    }

    /// Takes `n` sequence numbers in a row; returns the first.
    fn next_seqs(&self, n: u64) -> u64 {
        self.shared.seqs.fetch_add(n, Ordering::AcqRel) + 1
    }

    fn lease_id(&self, seq: u64) -> LeaseId {
        LeaseId::new(self.shared.incarnation, seq)
    }

    fn attempt_id(&self, seq: u64) -> AttemptId {
        AttemptId::new(self.shared.incarnation, seq)
    }

    /// The sequence number of a lease id from this incarnation.
    /// Refuses a fence from an earlier incarnation with `Restarted`.
    fn fence_of_this_incarnation(&self, fence: u64) -> Result<u64> {
        if fence <= self.shared.fence_floor {
            return Err(Error::Restarted);
        }
        Ok(fence)
    }

    fn lease_seq(&self, id: LeaseId) -> Result<u64> {
        id.seq_in(self.shared.incarnation).ok_or(Error::Restarted)
    }

    fn attempt_seq(&self, id: AttemptId) -> Result<u64> {
        id.seq_in(self.shared.incarnation).ok_or(Error::Restarted)
    }

    /// Validates `ttl` and turns it into an absolute deadline from `now`.
    fn deadline(&self, now: MonoTime, ttl: Duration) -> Result<u64> {
        self.shared.ttl.deadline(now, ttl)
    }

    /// A caller-supplied name kept shared (a stream consumer's): like
    /// every name (listing key, member, lock, holder, client, idempotency
    /// key), non-empty and at most `name_bytes_max` bytes.
    fn name(&self, name: &str) -> Result<Arc<str>> {
        self.check_name(name)?;
        Ok(Arc::from(name))
    }

    /// A caller-supplied name as a named record's key holds it (inline up
    /// to 23 bytes, ADR 0046), under the rules of [`name`](Self::name).
    #[inline(always)]
    fn key_name(&self, name: &str) -> Result<Name> {
        self.check_name(name)?;
        Ok(Name::new(name))
    }

    /// The rules of [`name`](Self::name), without copying the name.
    fn check_name(&self, name: &str) -> Result<()> {
        self.shared.config.check_name(name)
    }

    /// The name of something a caller creates beside the store's own
    /// (a stream, a queue, a schedule): [`name`](Self::name)'s rules,
    /// checked without copying it, and not the reserved `__` prefix
    /// ([`Error::ReservedName`]).
    fn check_own_name(&self, name: &str) -> Result<()> {
        self.shared.config.check_own_name(name)
    }

    /// Refuses with `ServiceUnavailable` once the store has stopped.
    fn refuse_if_stopped(&self) -> Result<()> {
        if self.is_stopped() {
            Err(Error::STOPPED)
        } else {
            Ok(())
        }
    }

    fn attrs(&self, attrs: &[u8]) -> Result<Attrs> {
        self.shared.config.check_attrs(attrs)?;
        Ok(Attrs::new(attrs))
    }

    /// Records that a lease was revoked, so renewals that miss it answer
    /// `Revoked`. Best effort: a full tombstone table must not stop a
    /// revocation (renewals then get `NotFound`, still a refusal).
    fn tombstone(&self, tenant: TenantId, seq: u64, now: MonoTime) {
        let deadline = now
            .saturating_add(self.shared.config.tombstone_ttl)
            .as_millis();
        if let Ok((_, Some(old))) = self.shared.tombstones.insert(seq, tenant, now, deadline) {
            let id = RecordId::Lease(self.lease_id(old.key));
            self.emit(Collection::Tombstones, old.value, id, Cause::Expired);
        }
    }

    /// Takes back a tombstone written for a revocation that did not happen.
    fn untombstone(&self, tenant: TenantId, seq: u64, now: MonoTime) {
        let removed =
            self.shared
                .tombstones
                .remove_with(&seq, |t, _, _| owned_by(*t == tenant), now);
        if let Ok(r) = removed {
            let id = RecordId::Lease(self.lease_id(r.key));
            self.emit(Collection::Tombstones, r.value, id, Cause::Released);
        }
    }

    fn emit(&self, collection: Collection, tenant: TenantId, id: RecordId, cause: Cause) {
        self.emit_with(collection, tenant, || id, cause);
    }

    /// [`emit_with`](Self::emit_with) for a removal `why` tells (its
    /// cause, and a cascade's root), with the record's holder, built only
    /// if someone subscribes.
    fn announce(
        &self,
        collection: Collection,
        tenant: TenantId,
        id: impl FnOnce() -> RecordId,
        why: &protocol::retire::Why,
        holder: impl FnOnce() -> Option<crate::base::name::Holder>,
    ) {
        crate::contract::metrics::removal(
            crate::contract::metrics::EngineLabel::Memory,
            collection,
            why.cause(),
        );
        if !self.shared.events.subscribed() {
            return;
        }
        self.shared.events.emit(Event {
            collection,
            tenant,
            id: id(),
            cause: why.cause(),
            holder: holder(),
            root: why.root().cloned(),
            // Numbered by the hub.
            seq: 0,
        });
    }

    /// [`emit`](Self::emit), building the record's id only if someone
    /// subscribes: a named record's id is the one copy of its name a
    /// removal makes (ADR 0046).
    fn emit_with(
        &self,
        collection: Collection,
        tenant: TenantId,
        id: impl FnOnce() -> RecordId,
        cause: Cause,
    ) {
        self.announce(collection, tenant, id, &cause.into(), || None);
    }
}

/// The table of collection `c`, bounded by the collection's store-wide
/// ceiling (the attempt table by [`Collection::Replay`]'s: every attempt
/// record, consumed ones included).
fn table<K, V, S>(
    config: &StoreConfig,
    c: Collection,
    versions: &Arc<Versions>,
    start: MonoTime,
) -> TableOf<K, V, S>
where
    K: Eq + std::hash::Hash + Ord + Clone,
    S: Storage<K, V>,
{
    Table::new(
        Scope::Collection(c),
        config.ceiling(c),
        Arc::clone(versions),
        start,
    )
}

/// The first fence of an incarnation that starts at wall time `wall`:
/// nanoseconds since the Unix epoch, or the host's `floor` if higher.
fn fence_floor(wall: SystemTime, floor: u64) -> u64 {
    let nanos = wall
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2));
    nanos.max(floor)
}

/// A removal predicate: approve iff `owned`.
fn owned_by(owned: bool) -> Result<()> {
    if owned {
        Ok(())
    } else {
        Err(Error::NotFound)
    }
}

impl Drop for Shared {
    /// The last handle is gone: the driver stops at its next wake-up, and
    /// every event subscriber, blocked or async, learns the store is closed
    /// once it has read what is buffered.
    fn drop(&mut self) {
        #[cfg(feature = "native")]
        builder::DriverStop::stop(&self.driver);
        self.events.close();
        self.wakes.close();
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field(
                "incarnation",
                &format_args!("{:016x}", self.shared.incarnation),
            )
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// Stamp helper shared by the collection modules.
fn stamp_deadline(stamp: &Stamp) -> u64 {
    stamp.deadline.as_millis()
}

#[cfg(all(any(test, feature = "internals"), not(relaystore_loom)))]
#[cfg(feature = "native")]
impl crate::mem::driver::Sweep for Store {
    fn sweep_expired(&self) -> usize {
        self.sweep()
    }
}
