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

mod audit;
mod idempotency;
mod join;
mod lease;
mod lifecycle;
mod listing;
mod lock;
mod presence;

pub use join::{Admission, Binding, JoinTicket};
pub use lease::{EndpointSeen, LeaseGrant, LeaseInfo};
pub use lifecycle::Health;
pub use listing::{Cursor, ListingInfo, Page};
pub use lock::{LockGuard, LockInfo, RESERVED_PREFIX};
pub use presence::PresenceInfo;

use crate::config::{QuotaPolicy, StoreConfig, TenantQuota, UniformQuota};
use crate::error::{Error, Result, Scope};
use crate::events::{Cause, Collection, Event, EventHub, RecordId, Subscription};
use crate::ids::{random_bytes, AttemptId, LeaseId, TenantId};
use crate::quota::Counter;
use crate::record::{Stamp, TtlRange, Versions};
use crate::shard::{ShardMap, Upsert};
use crate::sync::{lock, Arc, AtomicBool, AtomicU64, Mutex, Ordering};
use crate::table::{Removed, Table};
use crate::time::{Clock, MonoTime};
use idempotency::Idem;
use join::Attempt;
use lease::Lease;
use listing::Listing;
use lock::Lock;
use presence::Presence;
use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, SystemTime};

/// Leases and attempts are keyed by their sequence number alone (unique in
/// the store); the tenant is in the record, and every access by id checks
/// it, so another tenant's record answers exactly like a missing one. Half
/// the key of `(tenant, seq)`, in the map and in every wheel entry.
type IdKey = u64;
type NameKey = (TenantId, Arc<str>);

/// Per-tenant state that outlives tenant revocation: the quota counters,
/// and the indexes that `list` and tenant revocation walk.
pub(crate) struct Tenant {
    leases: Counter,
    listings: Counter,
    presence: Counter,
    attempts: Counter,
    replay: Counter,
    idempotency: Counter,
    locks: Counter,
    index: Mutex<TenantIndex>,
}

#[derive(Default)]
struct TenantIndex {
    /// Hashed, not ordered: nothing pages through a tenant's leases, and
    /// every expiry and revocation removes one at a random position, where
    /// an ordered set costs several cache misses (it was the largest single
    /// cost of expiring a lease at 10^6). Walks sort first.
    leases: HashSet<u64, ahash::RandomState>,
    listings: BTreeSet<Arc<str>>,
    members: BTreeSet<Arc<str>>,
}

/// One epoch of a tenant: what the registry holds for it, and what every
/// record made in it points at. Revoking the tenant ends the epoch (one
/// store, hiding every record of it at once) and registers a new one over
/// the same [`Tenant`] state. A record needs one pointer for both "whose?"
/// and "still valid?", and `repr(C)` keeps the flag and the id, which every
/// validation reads, in one line.
#[repr(C)]
pub(crate) struct Epoch {
    ended: AtomicBool,
    id: TenantId,
    tenant: Arc<Tenant>,
}

impl Epoch {
    fn first(id: TenantId, tenant: Tenant) -> Self {
        Epoch {
            ended: AtomicBool::new(false),
            id,
            tenant: Arc::new(tenant),
        }
    }

    /// Ends this epoch and returns the tenant's next one.
    fn end(&self) -> Self {
        self.ended.store(true, Ordering::Release);
        Epoch {
            ended: AtomicBool::new(false),
            id: self.id,
            tenant: Arc::clone(&self.tenant),
        }
    }
}

/// What occupies a key that an insert found taken.
pub(crate) enum Occupant {
    /// A visible record: the key is genuinely taken.
    Visible,
    /// A record being created right now (not yet visible): retry shortly.
    InFlight,
    /// An invisible record, now removed (or the key freed meanwhile).
    Cleared,
}

/// Which tenant a record belongs to, and in which of its epochs: one
/// pointer, in every record's map entry.
#[derive(Clone)]
pub(crate) struct Owner {
    epoch: Arc<Epoch>,
}

impl Owner {
    fn of(epoch: &Arc<Epoch>) -> Self {
        Owner {
            epoch: Arc::clone(epoch),
        }
    }

    /// False once the tenant has been revoked since the record was made.
    fn valid(&self) -> bool {
        !self.epoch.ended.load(Ordering::Acquire)
    }

    /// Whether the record belongs to `tenant`.
    fn is_of(&self, tenant: TenantId) -> bool {
        self.epoch.id == tenant
    }

    fn id(&self) -> TenantId {
        self.epoch.id
    }

    /// The tenant's counters and indexes.
    fn tenant(&self) -> &Tenant {
        &self.epoch.tenant
    }
}

/// Counts of records held, per collection (live or awaiting the sweep).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Leases held.
    pub leases: usize,
    /// Listings held.
    pub listings: usize,
    /// Presence records held.
    pub presence: usize,
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
    /// Tenants known.
    pub tenants: usize,
}

/// The in-memory relay state store.
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
/// let admitted = store.consume(game, &ticket.token)?;
/// assert_eq!(admitted.client.as_ref(), "client-7");
/// assert_eq!(store.consume(game, &ticket.token), Err(relaystore::Error::ReplayRejected));
///
/// store.revoke(game, lease.id)?; // the listing goes with it
/// assert_eq!(store.get_listing(game, "lobby-1"), Err(relaystore::Error::NotFound));
/// # Ok::<(), relaystore::Error>(())
/// ```
pub struct Store {
    config: StoreConfig,
    clock: Arc<dyn Clock>,
    incarnation: u32,
    seqs: AtomicU64,
    /// Each tenant's current epoch.
    tenants: ShardMap<TenantId, Arc<Epoch>>,
    tenant_count: Counter,
    leases: Table<IdKey, Lease>,
    /// Revoked leases' sequence numbers, with their tenant.
    tombstones: Table<IdKey, TenantId>,
    listings: Table<NameKey, Listing>,
    presence: Table<NameKey, Presence>,
    attempts: Table<IdKey, Attempt>,
    pending: Counter,
    idempotency: Table<NameKey, Idem>,
    locks: Table<NameKey, Lock>,
    events: Arc<EventHub>,
    ttl: TtlRange,
    policy: Arc<dyn QuotaPolicy>,
    state: AtomicU64,
    drain_deadline_ms: AtomicU64,
}

impl Store {
    /// A store with `config`'s limits on `clock`. Draws a random
    /// incarnation from the OS CSPRNG.
    pub fn new(config: StoreConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        let policy = Arc::new(UniformQuota(config.tenant.clone()));
        Self::with_policy(config, clock, policy)
    }

    /// A store whose per-tenant quotas come from `policy` (asked once, when
    /// a tenant is first seen) instead of `config.tenant`.
    pub fn with_policy(
        config: StoreConfig,
        clock: Arc<dyn Clock>,
        policy: Arc<dyn QuotaPolicy>,
    ) -> Result<Self> {
        config.validate()?;
        let mut bytes = [0; 4];
        random_bytes(&mut bytes)?;
        let start = clock.now();
        let versions = Arc::new(Versions::new());
        Ok(Store {
            incarnation: u32::from_le_bytes(bytes),
            seqs: AtomicU64::new(0),
            tenants: ShardMap::with_capacity(64),
            tenant_count: Counter::new(Scope::Collection("tenants"), config.tenants_max),
            leases: Table::new("leases", config.leases_max, Arc::clone(&versions), start),
            tombstones: Table::new(
                "tombstones",
                config.tombstones_max,
                Arc::clone(&versions),
                start,
            ),
            listings: Table::new(
                "listings",
                config.listings_max,
                Arc::clone(&versions),
                start,
            ),
            presence: Table::new(
                "presence",
                config.presence_max,
                Arc::clone(&versions),
                start,
            ),
            attempts: Table::new("replay", config.replay_max, Arc::clone(&versions), start),
            pending: Counter::new(Scope::Collection("attempts"), config.attempts_max),
            idempotency: Table::new(
                "idempotency",
                config.idempotency_max,
                Arc::clone(&versions),
                start,
            ),
            locks: Table::new("locks", config.locks_max, Arc::clone(&versions), start),
            events: Arc::new(EventHub::new(
                config.subscribers_max,
                config.subscriber_buffer_max,
            )),
            ttl: TtlRange::new(config.ttl_min, config.ttl_max)?,
            policy,
            state: AtomicU64::new(lifecycle::READY),
            drain_deadline_ms: AtomicU64::new(u64::MAX),
            clock,
            config,
        })
    }

    /// The limits this store was built with.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Subscribes to removal events. Refused with `CapacityExceeded` past
    /// `subscribers_max`.
    pub fn subscribe(&self) -> Result<Subscription> {
        self.events.subscribe()
    }

    /// Records held per collection.
    pub fn stats(&self) -> Stats {
        Stats {
            leases: self.leases.len(),
            listings: self.listings.len(),
            presence: self.presence.len(),
            attempts: self.attempts.len(),
            attempts_pending: self.pending.used(),
            tombstones: self.tombstones.len(),
            idempotency: self.idempotency.len(),
            locks: self.locks.len(),
            tenants: self.tenants.len(),
        }
    }

    /// The wall-clock time at which `deadline` falls, for reporting only.
    pub fn expires_at(&self, deadline: MonoTime) -> SystemTime {
        self.clock.wall() + deadline.saturating_since(self.clock.now())
    }

    /// How long ago the last sweep ran; large values mean a stalled driver.
    pub fn sweep_lag(&self) -> Duration {
        self.clock.now().saturating_since(self.leases_swept_to())
    }

    fn leases_swept_to(&self) -> MonoTime {
        self.leases.swept_to()
    }

    /// Physically removes everything that has expired by the store's clock
    /// and cascades removals to children. Returns how many records left.
    pub fn sweep(&self) -> usize {
        self.sweep_at(self.clock.now())
    }

    fn sweep_at(&self, now: MonoTime) -> usize {
        self.finish_drain_if_due(now);
        let mut n = 0;
        let mut leases = Vec::new();
        self.leases.sweep(now, &mut leases);
        for r in leases {
            n += 1 + self.retire_lease(r, Cause::Expired, now);
        }
        let mut presence = Vec::new();
        self.presence.sweep(now, &mut presence);
        for r in presence {
            n += 1;
            self.retire_presence(r, Cause::Expired, true);
        }
        let mut attempts = Vec::new();
        self.attempts.sweep(now, &mut attempts);
        for r in attempts {
            n += 1;
            self.retire_attempt(r, Cause::Expired, true);
        }
        let mut listings = Vec::new();
        self.listings.sweep(now, &mut listings);
        for r in listings {
            n += 1 + self.retire_listing(r, Cause::Expired, now, true);
        }
        let mut tombstones = Vec::new();
        self.tombstones.sweep(now, &mut tombstones);
        for r in tombstones {
            n += 1;
            self.emit(
                Collection::Tombstones,
                r.value,
                RecordId::Lease(self.lease_id(r.key)),
                Cause::Expired,
            );
        }
        let mut locks = Vec::new();
        self.locks.sweep(now, &mut locks);
        for r in locks {
            n += 1;
            self.retire_lock(r, Cause::Expired, true);
        }
        let mut idem = Vec::new();
        self.idempotency.sweep(now, &mut idem);
        for r in idem {
            n += 1;
            self.retire_idem(r, Cause::Expired);
        }
        n
    }

    /// Revokes a whole tenant: every record it has becomes invisible at once
    /// (its epoch moves on), then its leases (and everything attached) and
    /// presence records are removed. Idempotent; an unknown tenant is fine.
    pub fn revoke_tenant(&self, tenant: TenantId) -> Result<()> {
        // Under the registry's write lock, so two revocations end one epoch
        // each and a creator reads either the old epoch (its record is
        // hidden with the rest) or the new one.
        let (next, _) = self.tenants.upsert(tenant, |current| match current {
            Some(epoch) => {
                let next = Arc::new(epoch.end());
                Upsert::Put(Arc::clone(&next), Some(next))
            }
            None => Upsert::Keep(None),
        });
        if let Some(next) = next {
            let now = self.clock.now();
            self.end_tenant_records(tenant, &next.tenant, stale, Cause::Revoked, now);
        }
        Ok(())
    }

    /// Removes a tenant's indexed leases (tombstoned first, with everything
    /// attached) and presence records that `approve` accepts, with `cause`.
    /// Used by tenant revocation (stale records only) and by the end of a
    /// drain (everything).
    fn end_tenant_records(
        &self,
        tenant: TenantId,
        t: &Tenant,
        approve: fn(&Owner) -> Result<()>,
        cause: Cause,
        now: MonoTime,
    ) {
        let (mut leases, members) = {
            let index = lock(&t.index);
            (
                index.leases.iter().copied().collect::<Vec<_>>(),
                index.members.iter().cloned().collect::<Vec<_>>(),
            )
        };
        // Oldest first, as the same operations must give the same events.
        leases.sort_unstable();
        for seq in leases {
            // As for a single revocation: tombstone first, best effort.
            self.tombstone(tenant, seq, now);
            let removed = self
                .leases
                .remove_with(&seq, |v, _, _| approve(&v.owner), now);
            if let Ok(r) = removed {
                self.retire_lease(r, cause, now);
            }
        }
        for member in members {
            let removed =
                self.presence
                    .remove_with(&(tenant, member), |v, _, _| approve(&v.owner), now);
            if let Ok(r) = removed {
                self.retire_presence(r, cause, true);
            }
        }
    }

    // ----- shared helpers ----------------------------------------------------

    fn next_seq(&self) -> u64 {
        self.seqs.fetch_add(1, Ordering::AcqRel) + 1
    }

    fn lease_id(&self, seq: u64) -> LeaseId {
        LeaseId::new(self.incarnation, seq)
    }

    fn attempt_id(&self, seq: u64) -> AttemptId {
        AttemptId::new(self.incarnation, seq)
    }

    /// The sequence number of a lease id from this incarnation.
    fn lease_seq(&self, id: LeaseId) -> Result<u64> {
        if id.incarnation() != self.incarnation {
            return Err(Error::Restarted);
        }
        Ok(id.seq())
    }

    fn attempt_seq(&self, id: AttemptId) -> Result<u64> {
        if id.incarnation() != self.incarnation {
            return Err(Error::Restarted);
        }
        Ok(id.seq())
    }

    /// Validates `ttl` and turns it into an absolute deadline from `now`.
    fn deadline(&self, now: MonoTime, ttl: Duration) -> Result<u64> {
        self.ttl.deadline(now, ttl)
    }

    /// A caller-supplied name (listing key, member, holder, client,
    /// idempotency key): non-empty and at most `name_bytes_max` bytes.
    fn name(&self, name: &str) -> Result<Arc<str>> {
        if name.is_empty() {
            return Err(Error::InvalidName);
        }
        if name.len() > self.config.name_bytes_max {
            return Err(Error::InvalidArgument {
                reason: "name is longer than name_bytes_max",
            });
        }
        Ok(Arc::from(name))
    }

    fn attrs(&self, attrs: &[u8]) -> Result<Arc<[u8]>> {
        if attrs.len() > self.config.attrs_bytes_max {
            return Err(Error::InvalidArgument {
                reason: "attributes are larger than attrs_bytes_max",
            });
        }
        Ok(Arc::from(attrs))
    }

    /// The tenant's current epoch, if the tenant is known.
    fn tenant(&self, id: TenantId) -> Option<Arc<Epoch>> {
        self.tenants.read(&id, Arc::clone)
    }

    fn tenant_or_create(&self, id: TenantId) -> Result<Arc<Epoch>> {
        if let Some(t) = self.tenant(id) {
            return Ok(t);
        }
        let q = self.policy.quota(id);
        let quota = |scope, limit| {
            if limit == TenantQuota::OFF {
                Counter::uncounted(scope)
            } else {
                Counter::new(scope, limit)
            }
        };
        let (outcome, _) = self.tenants.upsert(id, |existing| match existing {
            Some(t) => Upsert::Keep(Ok(Arc::clone(t))),
            None if !self.tenant_count.try_acquire(1) => {
                Upsert::Keep(Err(Error::CapacityExceeded {
                    scope: Scope::Collection("tenants"),
                }))
            }
            None => {
                let t = Arc::new(Epoch::first(
                    id,
                    Tenant {
                        leases: quota(Scope::Tenant("leases"), q.leases_max),
                        listings: quota(Scope::Tenant("listings"), q.listings_max),
                        presence: quota(Scope::Tenant("presence"), q.presence_max),
                        attempts: quota(Scope::Tenant("attempts"), q.attempts_max),
                        replay: quota(Scope::Tenant("replay"), q.replay_max),
                        idempotency: quota(Scope::Tenant("idempotency"), q.idempotency_max),
                        locks: quota(Scope::Tenant("locks"), q.locks_max),
                        index: Mutex::new(TenantIndex::default()),
                    },
                ));
                Upsert::Put(Arc::clone(&t), Ok(t))
            }
        });
        outcome
    }

    /// Whether a lease is visible: `Ok`, or why not.
    fn lease_status(&self, tenant: TenantId, seq: u64, now: MonoTime) -> Result<()> {
        match self.read_lease(tenant, seq, now, |v, _| v.owner.valid()) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::Revoked),
            Err(Error::NotFound) => Err(self.gone(tenant, seq, now)),
            Err(e) => Err(e),
        }
    }

    /// Reads tenant `tenant`'s lease `seq`; `NotFound` if it is another
    /// tenant's.
    fn read_lease<R>(
        &self,
        tenant: TenantId,
        seq: u64,
        now: MonoTime,
        read: impl FnOnce(&Lease, Stamp) -> R,
    ) -> Result<R> {
        self.leases
            .read_owned(&seq, now, |v| v.owner.is_of(tenant), read)
    }

    /// What a missing lease is: revoked while its tombstone lives, else
    /// not found.
    fn gone(&self, tenant: TenantId, seq: u64, now: MonoTime) -> Error {
        match self.tombstones.read(&seq, now, |owner, _| *owner == tenant) {
            Ok(true) => Error::Revoked,
            _ => Error::NotFound,
        }
    }

    /// Records that a lease was revoked, so renewals that miss it answer
    /// `Revoked`. Best effort: a full tombstone table must not stop a
    /// revocation (renewals then get `NotFound`, still a refusal).
    fn tombstone(&self, tenant: TenantId, seq: u64, now: MonoTime) {
        let deadline = now.saturating_add(self.config.tombstone_ttl).as_millis();
        if let Ok((_, Some(old))) = self.tombstones.insert(seq, tenant, now, deadline) {
            let id = RecordId::Lease(self.lease_id(old.key));
            self.emit(Collection::Tombstones, old.value, id, Cause::Expired);
        }
    }

    fn emit(&self, collection: Collection, tenant: TenantId, id: RecordId, cause: Cause) {
        self.events.emit(Event {
            collection,
            tenant,
            id,
            cause,
        });
    }

    // ----- removal bookkeeping --------------------------------------------
    //
    // Each `retire_*` runs exactly once per record that left its table, by
    // whichever path removed it. It releases the tenant counters the record
    // owned (if it was attached), detaches it from its parent's index when
    // asked (`detach`: the parent is not itself being removed), cascades to
    // its children, and emits its event. Returns the number of descendants
    // removed.

    fn retire_lease(&self, r: Removed<IdKey, Lease>, cause: Cause, now: MonoTime) -> usize {
        let seq = r.key;
        let lease = r.value;
        let tenant = lease.owner.id();
        lease.owner.tenant().leases.release(1);
        lock(&lease.owner.tenant().index).leases.remove(&seq);
        self.emit(
            Collection::Leases,
            tenant,
            RecordId::Lease(self.lease_id(seq)),
            cause,
        );
        let mut n = 0;
        let children = lease.children.map(|c| *c).unwrap_or_default();
        for key in children.listings {
            let removed =
                self.listings
                    .remove_with(&(tenant, key), |v, _, _| owned_by(v.lease == seq), now);
            if let Ok(child) = removed {
                n += 1 + self.retire_listing(child, Cause::Cascaded, now, false);
            }
        }
        for member in children.members {
            let removed = self.presence.remove_with(
                &(tenant, member),
                |v, _, _| owned_by(v.lease == Some(seq)),
                now,
            );
            if let Ok(child) = removed {
                n += 1;
                self.retire_presence(child, Cause::Cascaded, false);
            }
        }
        for name in children.locks {
            let removed = self.locks.remove_with(
                &(tenant, name),
                |v, _, _| owned_by(v.lease == Some(seq)),
                now,
            );
            if let Ok(child) = removed {
                n += 1;
                self.retire_lock(child, Cause::Cascaded, false);
            }
        }
        n
    }

    fn retire_listing(
        &self,
        r: Removed<NameKey, Listing>,
        cause: Cause,
        now: MonoTime,
        detach: bool,
    ) -> usize {
        let (tenant, key) = r.key;
        let listing = r.value;
        if listing.attached {
            listing.owner.tenant().listings.release(1);
            lock(&listing.owner.tenant().index).listings.remove(&key);
            self.emit(
                Collection::Listings,
                tenant,
                RecordId::Listing(Arc::clone(&key)),
                cause,
            );
        }
        if detach {
            self.leases.modify(&listing.lease, |lease| {
                lease.detach(|c| &mut c.listings, &key);
            });
        }
        let mut n = 0;
        for seq in listing.attempts {
            let origin = listing.origin;
            let removed = self.attempts.remove_with(
                &seq,
                |v, _, _| owned_by(v.origin == origin && !v.phase.is_consumed()),
                now,
            );
            if let Ok(child) = removed {
                n += 1;
                self.retire_attempt(child, Cause::Cascaded, false);
            }
        }
        n
    }

    fn retire_presence(&self, r: Removed<NameKey, Presence>, cause: Cause, detach: bool) {
        let (tenant, member) = r.key;
        let presence = r.value;
        if presence.attached {
            presence.owner.tenant().presence.release(1);
            lock(&presence.owner.tenant().index).members.remove(&member);
            self.emit(
                Collection::Presence,
                tenant,
                RecordId::Member(Arc::clone(&member)),
                cause,
            );
        }
        if let (true, Some(lease)) = (detach, presence.lease) {
            self.leases.modify(&lease, |l| {
                l.detach(|c| &mut c.members, &member);
            });
        }
    }

    fn retire_attempt(&self, r: Removed<IdKey, Attempt>, cause: Cause, detach: bool) {
        let seq = r.key;
        let attempt = r.value;
        let tenant = attempt.owner.id();
        let consumed = attempt.phase.is_consumed();
        if attempt.attached {
            let owner = attempt.owner.tenant();
            owner.replay.release(1);
            if !consumed {
                owner.attempts.release(1);
                self.pending.release(1);
            }
            let collection = if consumed {
                Collection::Replay
            } else {
                Collection::Attempts
            };
            self.emit(
                collection,
                tenant,
                RecordId::Attempt(self.attempt_id(seq)),
                cause,
            );
        }
        if detach && !consumed {
            self.detach_attempt(tenant, &attempt.listing, attempt.origin, seq);
        }
    }

    fn detach_attempt(&self, tenant: TenantId, listing: &Arc<str>, origin: u64, seq: u64) {
        let key = (tenant, Arc::clone(listing));
        self.listings.modify(&key, |l| {
            if l.origin == origin {
                l.attempts.retain(|s| *s != seq);
            }
        });
    }

    fn retire_idem(&self, r: Removed<NameKey, Idem>, cause: Cause) {
        r.value.owner.tenant().idempotency.release(1);
        self.emit(
            Collection::Idempotency,
            r.key.0,
            RecordId::Key(r.key.1),
            cause,
        );
    }
}

/// A removal predicate: approve iff `owned`.
fn owned_by(owned: bool) -> Result<()> {
    if owned {
        Ok(())
    } else {
        Err(Error::NotFound)
    }
}

/// A removal predicate that approves any record (a drain ends everything).
fn any(_owner: &Owner) -> Result<()> {
    Ok(())
}

/// A removal predicate for tenant revocation: approve records of an earlier
/// epoch only.
fn stale(owner: &Owner) -> Result<()> {
    owned_by(!owner.valid())
}

#[cfg(not(relaystore_loom))]
impl crate::driver::Sweep for Store {
    fn sweep_expired(&self) -> usize {
        self.sweep()
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("incarnation", &format_args!("{:08x}", self.incarnation))
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// Stamp helper shared by the collection modules.
fn stamp_deadline(stamp: &Stamp) -> u64 {
    stamp.deadline.as_millis()
}
