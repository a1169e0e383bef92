//! Tenants: the registry of tenants that hold something now, their quota
//! counters and indexes, their epochs, and tenant revocation.
//!
//! # Ground rules
//!
//! - **A tenant is registered while it holds something.** Every record
//!   that points at a tenant, and every creation in flight for it, holds
//!   one unit of the tenant's `holds` count. The unit that a creation takes
//!   (a [`Hold`]) passes to its record when the creation commits, and is
//!   given back by whichever path removes the record. When the count falls
//!   to zero the tenant is forgotten: its registry slot (`tenants_max`) and
//!   its quota state go with it, so `tenants_max` bounds live tenants.
//! - **Holds are taken under the registry's shard lock** (shared for a
//!   known tenant, exclusive to register one), and a tenant is removed only
//!   under the exclusive lock after seeing zero holds. So a hold is never
//!   taken on a tenant that is being forgotten.
//! - **Or through the thread's kept epoch.** A thread that took two holds
//!   in a row on one tenant through a store's registry keeps that epoch
//!   ([`LastHeld`]). Its next creations for the tenant take their holds
//!   there, without the registry, by an increment that refuses zero:
//!   `holds` above zero means the tenant is registered and stays so (the
//!   removal above sees the unit), and a tenant at zero may be on its way
//!   out, so that creation goes to the registry. An epoch seen ended also
//!   goes there; one that ends just after the look is the race every
//!   creation already has with a tenant revocation (its record is hidden
//!   with the rest).
//! - **A refusal registers nothing.** A new tenant is registered only after
//!   its own quota for what it asks has been seen to be non-zero, and a
//!   refused creation gives its hold back, which forgets a tenant that
//!   holds nothing else.

use super::{Collection, Store};
use crate::base::collection::Kind;
use crate::base::error::{Error, Result, Scope};
use crate::base::faults::{self, StoreFault};
use crate::base::ids::TenantId;
use crate::base::name::Holder;
use crate::base::sync::{lock_at, Arc, AtomicBool, AtomicU64, Mutex, Ordering, Rung};
use crate::base::time::MonoTime;
use crate::base::words::LimitSnapshot;
use crate::contract::config::TenantQuota;
use crate::contract::events::Cause;
use crate::contract::kinds::RecordKind;
use crate::mem::quota::Counter;
use crate::mem::shard::Upsert;
use crossbeam_utils::CachePadded;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Weak;

/// Per-tenant state that outlives tenant revocation: the quota counters,
/// the count of what the tenant holds, and the indexes that `list` and
/// tenant revocation walk. `repr(C)` keeps `holds` beside the index lock:
/// every creation of a listing or a presence record touches both, so they
/// share a cache line. The quotas every admission reads are padded onto
/// lines of their own: every creation and removal writes `holds`, and a
/// read of the quotas on another core would otherwise miss each time.
#[repr(C)]
pub(crate) struct Tenant {
    /// One quota counter per collection, indexed by `Collection as usize`
    /// (uncounted where the quota is off at registration, and for
    /// tombstones).
    quotas: [Counter; Collection::ALL.len()],
    /// The tenant's quotas now: replaced whole when the store's policy is
    /// (`Store::set_quota_policy`), read whole by each admission.
    limits: CachePadded<LimitSnapshot<TenantQuota>>,
    /// Records pointing at this tenant plus creations in flight for it.
    pub(super) holds: AtomicU64,
    pub(super) index: Mutex<TenantIndex>,
    /// Leases and listings per holder, for the per-holder quotas that were
    /// on when the tenant registered (`None`: both off, nothing counted).
    holders: Option<Holders>,
    /// One counter per declared record kind, in the kinds' order, bounded
    /// by its `per_tenant_max` (empty for a store without kinds).
    kinds: Box<[Counter]>,
}

/// A tenant's per-holder counts: `[leases, listings]` by holder, an entry
/// while either is above zero.
struct Holders {
    counted: [bool; 2],
    counts: Mutex<HashMap<Holder, [u64; 2]>>,
}

/// Where a collection's count is in a holder's entry.
fn holder_slot(c: Collection) -> Option<usize> {
    match c {
        Collection::Leases => Some(0),
        Collection::Listings => Some(1),
        _ => None,
    }
}

impl Tenant {
    fn new(q: &TenantQuota, kinds: &[RecordKind]) -> Self {
        let quota = |c: Collection| {
            let limit = q.limit(c);
            let scope = Scope::Tenant(c);
            if limit == TenantQuota::OFF {
                Counter::uncounted(scope)
            } else {
                Counter::new(scope, limit)
            }
        };
        Tenant {
            quotas: Collection::ALL.map(quota),
            limits: CachePadded::new(LimitSnapshot::new(q.clone())),
            holds: AtomicU64::new(0),
            index: Mutex::new(TenantIndex::default()),
            holders: {
                let counted = [Collection::Leases, Collection::Listings]
                    .map(|c| q.per_holder(c) != TenantQuota::OFF);
                counted.contains(&true).then(|| Holders {
                    counted,
                    counts: Mutex::new(HashMap::new()),
                })
            },
            kinds: (0..kinds.len())
                .filter_map(Kind::at)
                .map(|kind| {
                    Counter::new(Scope::KindTenant(kind), kinds[kind.index()].per_tenant_max)
                })
                .collect(),
        }
    }

    /// The tenant's counter of records of declared kind `kind`.
    pub(super) fn kind_quota(&self, kind: Kind) -> Option<&Counter> {
        self.kinds.get(kind.index())
    }

    /// Whether this tenant counts `c` per holder (decided at registration).
    pub(super) fn counts_per_holder(&self, c: Collection) -> bool {
        match (&self.holders, holder_slot(c)) {
            (Some(h), Some(at)) => h.counted[at],
            _ => false,
        }
    }

    /// Counts one more `c` for `holder` if the holder's quota has room:
    /// `Ok(true)` if counted (the caller gives it back with
    /// [`release_holder`](Self::release_holder)), `Ok(false)` if this
    /// tenant does not count `c` per holder, else the refusal naming the
    /// holder's scope.
    pub(super) fn acquire_holder(&self, holder: &Holder, c: Collection) -> Result<bool> {
        let (Some(h), Some(at)) = (&self.holders, holder_slot(c)) else {
            return Ok(false);
        };
        if !h.counted[at] {
            return Ok(false);
        }
        let limit = self.limits.read(|q| q.per_holder(c));
        let mut counts = lock_at(Rung::Holders, &h.counts);
        let used = counts.get(holder).map_or(0, |e| e[at]);
        if used >= limit {
            return Err(Error::CapacityExceeded {
                scope: Scope::Holder(c),
                limit,
                used,
            });
        }
        counts.entry(holder.clone()).or_default()[at] += 1;
        Ok(true)
    }

    /// Gives back one `c` that [`acquire_holder`](Self::acquire_holder)
    /// counted for `holder`.
    pub(super) fn release_holder(&self, holder: &Holder, c: Collection) {
        let (Some(h), Some(at)) = (&self.holders, holder_slot(c)) else {
            return;
        };
        let mut counts = lock_at(Rung::Holders, &h.counts);
        if let Some(entry) = counts.get_mut(holder) {
            entry[at] = entry[at].saturating_sub(1);
            if *entry == [0, 0] {
                counts.remove(holder);
            }
        }
    }

    /// The tenant's quota counter for collection `c`.
    pub(super) fn quota(&self, c: Collection) -> &Counter {
        &self.quotas[c as usize]
    }

    /// The tenant's current quotas on `collections` (at most four), read
    /// whole, in order.
    #[inline]
    pub(super) fn limits(&self, collections: &[Collection]) -> [u64; 4] {
        debug_assert!(collections.len() <= 4, "at most four quotas at once");
        let at: [Option<usize>; 4] =
            std::array::from_fn(|i| collections.get(i).and_then(|&c| TenantQuota::word_of(c)));
        let words = self.limits.read_words(at.map(|w| w.unwrap_or(0)));
        std::array::from_fn(|i| at[i].map_or(TenantQuota::OFF, |_| words[i]))
    }

    /// The tenant's current quota on `c`.
    pub(super) fn limit(&self, c: Collection) -> u64 {
        self.limits.read(|q| q.limit(c))
    }

    /// Replaces the tenant's quotas whole. A quota that was off when the
    /// tenant registered stays uncounted (nothing was counted to check it
    /// against) until the tenant registers again.
    pub(super) fn requota(&self, q: TenantQuota) {
        for c in Collection::ALL {
            self.quotas[c as usize].set_limit(q.limit(c));
        }
        self.limits.store(q);
    }
}

/// The tenant's listings and presence records, for `list` and for tenant
/// revocation, each by its place: the slot key that names it for good, a
/// word where its name is several (pages come in slot-key order). Its
/// leases are not indexed: a walk finds them in one pass over the lease
/// slab (ADR 0043), so a grant and a lease's removal take no lock of the
/// tenant's.
#[derive(Default)]
pub(crate) struct TenantIndex {
    pub(super) listings: BTreeSet<u64>,
    pub(super) members: BTreeSet<u64>,
}

/// One epoch of a tenant: what the registry holds for it, and what every
/// record made in it points at. Revoking the tenant ends the epoch (one
/// store, hiding every record of it at once) and registers a new one over
/// the same [`Tenant`] state. A record needs one pointer for both "whose?"
/// and "still valid?", and `repr(C)` keeps the flag and the id, which every
/// validation reads, in one line. That line is not the `Arc`'s: the
/// alignment (128 bytes, the span `CachePadded` gives on x86-64, whose
/// prefetcher fetches lines in pairs) puts the fields 128 bytes past the
/// reference counts, which every creation and removal of a record in the
/// epoch writes, while every renewal and read of one reads the fields.
#[repr(C, align(128))]
pub(crate) struct Epoch {
    ended: AtomicBool,
    pub(super) id: TenantId,
    pub(super) tenant: Arc<Tenant>,
}

impl Epoch {
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

/// The store's count of tenant revocations, which lets a read that takes
/// no lock trust a lease's epoch without following its pointer
/// (`LeaseWords::valid_at` in `lease.rs`). One word: revocations ended in
/// the high 48 bits, revocations at work in the low 16. A revocation adds
/// one to the low part before its tenant's epoch ends and moves it to the
/// high part after. A lease's words record the count (read first, with
/// none at work) at which its epoch was then seen valid under the slot's
/// lock; a read without the lock keeps a lease only while the count still
/// equals what its words record, so once an epoch has ended no read
/// trusts a record of it, and any tenant's revocation sends each lease's
/// next read to its lock once. Written only by revocations: a read loads
/// it and shares its line with no writer. A revocation that panicked
/// between its two adds leaves one at work for good: every lease read
/// then takes its lock (slower, never wrong).
pub(crate) struct Revocations {
    word: crossbeam_utils::CachePadded<AtomicU64>,
}

/// One revocation at work.
const AT_WORK: u64 = 1;
/// One revocation ended.
const ENDED: u64 = 1 << 16;

impl Revocations {
    /// What a lease's words hold until its epoch is first seen valid: a
    /// count never reached (65,535 revocations would have to be at work).
    pub(crate) const NEVER: u64 = u64::MAX;

    pub(crate) fn new() -> Self {
        Revocations {
            word: crossbeam_utils::CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// The count now, to read before checking an epoch under a lock.
    pub(crate) fn now(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    /// Whether `count` had no revocation at work.
    pub(crate) fn settled(count: u64) -> bool {
        count.is_multiple_of(ENDED)
    }

    /// Whether the count is still `recorded`: no revocation began since an
    /// epoch was seen valid at it.
    #[inline]
    pub(crate) fn still(&self, recorded: u64) -> bool {
        self.word.load(Ordering::Acquire) == recorded
    }

    /// Runs `end` (which ends a tenant's epoch) as a counted revocation.
    /// (The model checker's broken twin counts it only after.)
    pub(crate) fn during<R>(&self, end: impl FnOnce() -> R) -> R {
        let unmarked =
            crate::base::faults::active(crate::base::faults::StoreFault::EpochEndUnmarked);
        if !unmarked {
            self.word.fetch_add(AT_WORK, Ordering::AcqRel);
        }
        let ended = end();
        if unmarked {
            self.word.fetch_add(ENDED, Ordering::AcqRel);
        } else {
            self.word.fetch_add(ENDED - AT_WORK, Ordering::AcqRel);
        }
        ended
    }
}

/// Which tenant a record belongs to, and in which of its epochs: one
/// pointer, in every record's map entry.
#[derive(Clone)]
pub(crate) struct Owner {
    epoch: Arc<Epoch>,
}

impl Owner {
    pub(super) fn of(epoch: &Arc<Epoch>) -> Self {
        Owner {
            epoch: Arc::clone(epoch),
        }
    }

    /// False once the tenant has been revoked since the record was made.
    pub(super) fn valid(&self) -> bool {
        !self.epoch.ended.load(Ordering::Acquire)
    }

    /// Whether the record belongs to `tenant`.
    pub(super) fn is_of(&self, tenant: TenantId) -> bool {
        self.epoch.id == tenant
    }

    pub(super) fn id(&self) -> TenantId {
        self.epoch.id
    }

    /// The tenant's counters and indexes.
    pub(super) fn tenant(&self) -> &Tenant {
        &self.epoch.tenant
    }
}

/// One unit of a tenant's `holds`, taken for a creation in flight. Given
/// back on drop (which forgets a tenant left with nothing) unless
/// [`keep`](Self::keep) passes it to the record the creation made.
pub(super) struct Hold<'s> {
    store: &'s Store,
    /// `None` once [`into_epoch`](Self::into_epoch) handed it on.
    epoch: Option<Arc<Epoch>>,
}

impl Hold<'_> {
    fn new(store: &Store, epoch: Arc<Epoch>) -> Hold<'_> {
        Hold {
            store,
            epoch: Some(epoch),
        }
    }

    pub(super) fn epoch(&self) -> &Arc<Epoch> {
        self.epoch
            .as_ref()
            .expect("a hold has its epoch until handed on")
    }

    /// The epoch, with the unit: the caller now owns it and gives it back
    /// with [`Store::release_tenant`] unless a record takes it over.
    pub(super) fn into_epoch(mut self) -> Arc<Epoch> {
        self.epoch
            .take()
            .expect("a hold has its epoch until handed on")
    }

    /// The record now owns the unit.
    pub(super) fn keep(mut self) {
        self.epoch = None;
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        if let Some(epoch) = self.epoch.take() {
            self.store.release_tenant(&epoch.tenant, epoch.id);
        }
    }
}

/// The tenant this thread last took a hold on through the registry, in
/// which store, and, once it took two there in a row, that tenant's
/// epoch. A relay thread often creates for one tenant many times in a
/// row, and a hold taken through the epoch writes two lines fewer than
/// one taken through the registry (its shard's lock word, taken and let
/// go), lines every thread creating for a tenant of that shard writes
/// too. A thread that moves from tenant to tenant keeps only their ids:
/// its holds cost what they did, plus a compare (and, when it moves off a
/// kept epoch, letting that go).
///
/// A `Weak` pointer: it keeps the epoch's 256 bytes allocated until the
/// thread remembers another, never the tenant's state (quotas, index)
/// once nothing else points at it. One per thread, whatever the number of
/// stores and tenants.
struct LastHeld {
    /// The store's [`instance`](super::Shared::instance).
    store: u64,
    tenant: TenantId,
    epoch: Option<Weak<Epoch>>,
}

crate::base::sync::thread_cell! {
    static LAST_HELD: RefCell<Option<LastHeld>> = RefCell::new(None);
}

impl LastHeld {
    /// Takes a hold on `tenant` through the epoch this thread remembers,
    /// if it is of `tenant` in `store`, still current, and the tenant
    /// holds something (the ground rules).
    fn hold(store: u64, tenant: TenantId) -> Option<Arc<Epoch>> {
        let epoch = LAST_HELD.with(|last| {
            let last = last.borrow();
            let last = last
                .as_ref()
                .filter(|l| l.store == store && l.tenant == tenant)?;
            last.epoch.as_ref()?.upgrade()
        })?;
        if epoch.ended.load(Ordering::Acquire) {
            return None;
        }
        let holds = &epoch.tenant.holds;
        let held = if faults::active(StoreFault::HoldRevivesForgotten) {
            holds.fetch_add(1, Ordering::AcqRel);
            true
        } else {
            holds
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                    (h > 0).then_some(h + 1)
                })
                .is_ok()
        };
        held.then_some(epoch)
    }

    /// Notes a hold on `epoch` taken through the registry of `store`: the
    /// epoch is remembered if the one before was on the same tenant.
    fn taken(store: u64, epoch: &Arc<Epoch>) {
        LAST_HELD.with(|last| {
            let mut last = last.borrow_mut();
            match last.as_mut() {
                Some(l) if l.store == store && l.tenant == epoch.id => {
                    l.epoch = Some(Arc::downgrade(epoch));
                }
                _ => {
                    *last = Some(LastHeld {
                        store,
                        tenant: epoch.id,
                        epoch: None,
                    });
                }
            }
        });
    }
}

impl Store {
    /// The tenant's current epoch, if the tenant holds anything.
    pub(super) fn tenant(&self, id: TenantId) -> Option<Arc<Epoch>> {
        self.shared.tenants.read(&id, Arc::clone)
    }

    /// Takes a hold on tenant `id` for a creation that will reserve units
    /// in `quotas`, registering the tenant if it holds nothing yet. A new
    /// tenant whose quota for one of `quotas` is zero is refused before it
    /// takes a registry slot.
    pub(super) fn hold_tenant(&self, id: TenantId, quotas: &[Collection]) -> Result<Hold<'_>> {
        if let Some(hold) = self.hold_known_tenant(id) {
            return Ok(hold);
        }
        let epoch = self.register_tenant(id, quotas)?;
        LastHeld::taken(self.shared.instance, &epoch);
        Ok(Hold::new(self, epoch))
    }

    /// A hold on tenant `id` if it is registered; never registers it.
    pub(super) fn hold_known_tenant(&self, id: TenantId) -> Option<Hold<'_>> {
        if let Some(epoch) = LastHeld::hold(self.shared.instance, id) {
            return Some(Hold::new(self, epoch));
        }
        let epoch = self.shared.tenants.read(&id, |epoch| {
            epoch.tenant.holds.fetch_add(1, Ordering::AcqRel);
            Arc::clone(epoch)
        })?;
        LastHeld::taken(self.shared.instance, &epoch);
        Some(Hold::new(self, epoch))
    }

    /// Gives back the hold of a record that left its table.
    pub(super) fn release_owner(&self, owner: &Owner) {
        self.release_tenant(&owner.epoch.tenant, owner.epoch.id);
    }

    fn register_tenant(&self, id: TenantId, quotas: &[Collection]) -> Result<Arc<Epoch>> {
        // The policy is the host's code: asked outside every lock.
        let policy = self.shared.policy.read(Arc::clone);
        let q = policy.quota(id);
        if let Some(&c) = quotas.iter().find(|&&c| q.limit(c) == 0) {
            return Err(Error::capacity(Scope::Tenant(c), 0, 0));
        }
        let (outcome, _) = self.shared.tenants.upsert(id, |existing| match existing {
            Some(epoch) => {
                epoch.tenant.holds.fetch_add(1, Ordering::AcqRel);
                Upsert::Keep(Ok(Arc::clone(epoch)))
            }
            None if !self.shared.tenant_count.try_acquire(1) => {
                let count = &self.shared.tenant_count;
                Upsert::Keep(Err(count.refusal(count.used())))
            }
            None => {
                let tenant = Tenant::new(&q, &self.shared.config.kinds);
                tenant.holds.store(1, Ordering::Release);
                let epoch = Arc::new(Epoch {
                    ended: AtomicBool::new(false),
                    id,
                    tenant: Arc::new(tenant),
                });
                Upsert::Put(Arc::clone(&epoch), Ok(epoch))
            }
        });
        // A policy replaced while this registered: the walk of the
        // registry may have run before this tenant was in it.
        if let Ok(epoch) = &outcome {
            let now = self.shared.policy.read(Arc::clone);
            if !Arc::ptr_eq(&now, &policy) {
                epoch.tenant.requota(now.quota(id));
            }
        }
        outcome
    }

    /// Gives back one unit of `tenant`'s holds; the last one forgets it.
    pub(super) fn release_tenant(&self, tenant: &Arc<Tenant>, id: TenantId) {
        let before = tenant.holds.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(before > 0, "{id} released a hold it did not have");
        if before != 1 {
            return;
        }
        let forgotten = self.shared.tenants.remove_if(&id, |epoch| {
            let idle = Arc::ptr_eq(&epoch.tenant, tenant)
                && epoch.tenant.holds.load(Ordering::Acquire) == 0;
            if idle {
                Ok(())
            } else {
                Err(())
            }
        });
        if let Some(Ok(_)) = forgotten {
            self.shared.tenant_count.release(1);
        }
    }

    /// Revokes a whole tenant: every record it has becomes invisible at once
    /// (its epoch moves on), then its leases (and everything attached) and
    /// presence records are removed. Idempotent; an unknown tenant is fine.
    ///
    /// Finding the tenant's leases is one pass over every lease the store
    /// holds (ADR 0043): about 19 ms with a million leases held, on the
    /// development machine. The pass runs outside the commit gate and
    /// holds each lease's lock only while it looks at that lease.
    pub fn revoke_tenant(&self, tenant: TenantId) -> Result<()> {
        let _span = tracing::info_span!("relaystore_revoke_tenant", tenant = tenant.0).entered();
        // Under the registry's write lock, so two revocations end one epoch
        // each and a creator reads either the old epoch (its record is
        // hidden with the rest) or the new one.
        let ended = {
            let _in = self.enter();
            let (next, _) = self.shared.revocations.during(|| {
                self.shared.tenants.upsert(tenant, |current| match current {
                    Some(epoch) => {
                        let next = Arc::new(epoch.end());
                        Upsert::Put(Arc::clone(&next), Some(next))
                    }
                    None => Upsert::Keep(None),
                })
            });
            next
        };
        let Some(next) = ended else {
            return Ok(());
        };
        // After the epoch ended: a lease of the old epoch that the pass
        // misses was filled after the pass went by its slot, and stays
        // invisible until its deadline removes it (as one indexed after the
        // index was walked did). Outside the gate, since the pass changes
        // nothing and a commit need not wait for it.
        let leases = self
            .leases_by_tenant(Some(tenant))
            .remove(&tenant)
            .unwrap_or_default();
        let _in = self.enter();
        let now = self.shared.clock.now();
        self.end_tenant_records(tenant, &next.tenant, leases, stale, Cause::Revoked, now);
        Ok(())
    }

    /// The seqs of the leases held, by tenant (only `only`'s, if given),
    /// each tenant's in increasing order, so that the same operations give
    /// the same events. One pass over the lease slab: a fill the pass
    /// misses happens after the pass began (`Slab::for_each`).
    pub(super) fn leases_by_tenant(&self, only: Option<TenantId>) -> BTreeMap<TenantId, Vec<u64>> {
        let mut by = BTreeMap::<TenantId, Vec<u64>>::new();
        self.shared.leases.for_each(|seq, lease, _| {
            let id = lease.owner.id();
            if only.is_none_or(|t| t == id) {
                by.entry(id).or_default().push(*seq);
            }
        });
        for seqs in by.values_mut() {
            seqs.sort_unstable();
        }
        by
    }

    /// Removes `leases` (tombstoned first, with everything attached) and
    /// the tenant's indexed presence records where `approve` accepts them,
    /// with `cause`. Used by tenant revocation (stale records only); the
    /// end of a drain calls the two halves a batch at a time.
    pub(super) fn end_tenant_records(
        &self,
        tenant: TenantId,
        t: &Tenant,
        leases: Vec<u64>,
        approve: fn(&Owner) -> Result<()>,
        cause: Cause,
        now: MonoTime,
    ) {
        let members = self.members_of(t);
        self.end_leases(tenant, &leases, approve, cause, now);
        self.end_members(tenant, &members, approve, cause, now);
    }

    /// The places of a tenant's presence records now (its index).
    pub(super) fn members_of(&self, t: &Tenant) -> Vec<u64> {
        lock_at(Rung::TenantIndex, &t.index)
            .members
            .iter()
            .copied()
            .collect()
    }

    /// Removes `leases` of `tenant` (tombstoned first, with everything
    /// attached) where `approve` accepts them; how many it removed.
    pub(super) fn end_leases(
        &self,
        tenant: TenantId,
        leases: &[u64],
        approve: fn(&Owner) -> Result<()>,
        cause: Cause,
        now: MonoTime,
    ) -> usize {
        let mut removed = 0;
        for &seq in leases {
            // As for a single revocation: tombstone first, best effort.
            self.tombstone(tenant, seq, now);
            let taken = self
                .shared
                .leases
                .remove_with(&seq, |v, _, _| approve(&v.owner), now);
            if let Ok(r) = taken {
                self.retire_lease(r, cause, now);
                removed += 1;
            }
        }
        removed
    }

    /// Removes the presence records of `tenant` at `places` (its index's)
    /// where `approve` accepts them; how many it removed. A record is
    /// removed by its name, read at its place: one that left its place
    /// meanwhile is gone or another record.
    pub(super) fn end_members(
        &self,
        tenant: TenantId,
        places: &[u64],
        approve: fn(&Owner) -> Result<()>,
        cause: Cause,
        now: MonoTime,
    ) -> usize {
        let mut removed = 0;
        for &place in places {
            let Some(key) = self.shared.presence.key_at(place) else {
                continue;
            };
            if key.0 != tenant {
                continue;
            }
            let taken = self.shared.presence.remove_placed(
                &key,
                |v, _, _| approve(&v.owner),
                now,
                |&place| place,
            );
            if let Ok((place, r)) = taken {
                self.retire_presence(place, r, cause, true);
                removed += 1;
            }
        }
        removed
    }
}

/// A removal predicate that approves any record (a drain ends everything).
pub(super) fn any(_owner: &Owner) -> Result<()> {
    Ok(())
}

/// A removal predicate for tenant revocation: approve records of an earlier
/// epoch only.
fn stale(owner: &Owner) -> Result<()> {
    super::owned_by(!owner.valid())
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of};

    #[test]
    fn what_readers_read_is_apart_from_what_writers_write() {
        // An epoch's fields start 128 bytes past its `Arc`'s counts.
        assert_eq!(align_of::<Epoch>(), 128);
        // The quotas every admission reads are not on the line of the
        // count every creation writes.
        let limits = offset_of!(Tenant, limits);
        assert!(offset_of!(Tenant, holds) >= limits + 128);
        assert_eq!(limits % 128, 0);
    }
}
