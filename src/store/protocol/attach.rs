//! The one creation protocol: how every record comes into the store.
//!
//! Grants, publishes, new presence records, named locks and join attempts
//! all run [`Store::create`]. It owns the order of the steps, and a
//! [`Pending`] guard undoes every step taken so far on a refusal, an error
//! or a panic, so no caller writes any of this sequence by hand.
//!
//! # Ground rules
//!
//! 1. **Lifecycle first.** A draining or stopped store refuses before
//!    anything is taken.
//! 2. **Narrow scopes before shared ones.** The tenant hold (a known
//!    tenant: nothing shared), then a slot in the parent's index of
//!    children (the per-parent cap), then the holder's quota (leases and
//!    listings, for a tenant that counts them per holder), then the
//!    tenant's quotas. Only then
//!    the shared scopes: a new tenant's registry slot (taken only for
//!    records without a parent, after its quota was seen to be non-zero),
//!    store-wide counters, and the table's ceiling inside the insert. A
//!    doomed operation — one its own tenant's limits refuse — so never
//!    holds a unit that another tenant's admission needs, even for an
//!    instant. A join's slot in its listing is taken in the one visit
//!    that finds the listing visible and reads its publication; the
//!    listing's lease is looked at after, with the slot held, and a lease
//!    found gone gives the slot back (the listing answers as missing).
//! 3. **Insert invisible, confirm, then attach.** A child is inserted
//!    unattached (invisible). Its parent slot is then confirmed under the
//!    parent's shard lock: if the parent was removed since the slot was
//!    taken, the removal could not see the child, so the creation fails
//!    and removes the child itself; if the parent is removed after the
//!    confirmation, the removal's cascade finds the slot and removes the
//!    child. A lease's slot for a record is a count of slots taken until
//!    then, and the confirmation turns it into the record's place (its
//!    slot key), which is all the lease keeps of it. Last, the record is marked attached (visible); a kind the
//!    tenant's index holds (listings, presence) is marked and indexed
//!    under the index's lock, so a tenant revocation or a drain that walks
//!    the index either sees it or happened before it.
//! 4. **Commit, then look at the stop.** The guard's units pass to the
//!    record. A drain that stopped the store while the creation was in
//!    flight may have walked the tenant's index, or passed the lease's
//!    slot, before the record was there, so a creation that sees the
//!    store stopped takes its record back (cause `Drained`) and answers
//!    `ServiceUnavailable`. A drain that stops the store after that look
//!    walks the index (or the lease slab, `Slab::for_each`) after the
//!    record was put there, and removes it.
//! 5. **A taken key.** An insert that finds the key held by a visible
//!    record answers `Conflict`; by a creation in flight, `InFlight`; by a
//!    record no longer visible (its ancestor or tenant gone), the record is
//!    removed and the insert tried once more. A key found taken at both
//!    tries answers `Conflict`.
//!
//! A record without a parent (a lease; presence or a lock without a lease)
//! has nothing to confirm: it is inserted attached (and, if indexed,
//! indexed under the same hold of the tenant's index lock), so it is
//! visible from the moment it exists (a lock's fence is readable the
//! moment the lock is held).

use crate::base::collection::{Kind, KINDS_MAX};
use crate::base::error::{Error, Result, Scope};
use crate::base::ids::TenantId;
use crate::base::name::Holder;
use crate::base::name::Name;
use crate::base::sync::{lock_at, Arc, Rung};
use crate::base::time::MonoTime;
use crate::contract::config::{Limits, StoreConfig};
use crate::contract::events::Cause;
use crate::mem::quota::{Counter, Reservation};
use crate::mem::record::Stamp;
use crate::store::protocol::retire::{Stored, Why};
use crate::store::protocol::visible::Ancestry;
use crate::store::tenant::{Epoch, Owner, Tenant, TenantIndex};
use crate::store::{owned_by, protocol::decide, Collection, Store};
use std::cell::Cell;

/// A kind of record that [`Store::create`] can make.
pub(in crate::store) trait Child: Stored {
    /// The tenant quotas one record takes a unit of, narrowest first.
    const QUOTAS: &'static [Collection];
    /// A store-wide counter the record takes a unit of, besides its
    /// table's ceiling.
    fn shared(_store: &Store) -> Option<&Counter> {
        None
    }
    fn attached(&self) -> bool;
    fn set_attached(&mut self);
    /// What the record's visibility depends on.
    fn ancestry(&self) -> Ancestry;
    /// How a record of this kind goes into the tenant's index, by its
    /// place, if it does (listings and presence records). An indexed
    /// record is made visible under the index's lock; any other without
    /// it.
    const INDEX: Option<fn(u64, &mut TenantIndex)> = None;
    /// Whether this is the record a creation inserted at `version`, for
    /// taking it back after a stop (the default: the key alone says so).
    fn made_at(&self, _version: u64) -> bool {
        true
    }
    /// The collection whose per-holder quota a record of this kind counts
    /// against (leases, listings), if any.
    const HOLDER_QUOTA: Option<Collection> = None;
    /// Keeps the holder the creation counted this record against, for the
    /// removal that gives it back (a lease has its holder already).
    fn count_holder(&mut self, _holder: Holder) {}
    /// A declared kind's counters of the record under `key`, besides its
    /// collection's: the kind's quota in `tenant`, taken after the
    /// tenant's quotas, and the kind's store-wide ceiling, taken with the
    /// shared scopes. None for the built-in kinds.
    fn kind_counters<'s, 't>(
        _store: &'s Store,
        _tenant: &'t Tenant,
        _key: &Self::Key,
    ) -> Option<(&'t Counter, &'s Counter)> {
        None
    }
}

/// The kind of child a lease keeps: its collection, where the lease keeps
/// it, and its cap per lease. A record kind's descriptor is its
/// [`OnLease::CHILD`]; streams, kept by name, have [`STREAMS`](Self::STREAMS).
#[derive(Clone, Copy)]
pub(in crate::store) struct LeaseChild {
    collection: Collection,
    /// Its run among a lease's places: its position in
    /// [`ON_LEASE`](crate::store::ON_LEASE); `None` for streams, kept by name.
    run: Option<usize>,
    cap: fn(&StoreConfig) -> usize,
    /// For a declared kind's records, which share one run: the kind, whose
    /// number each of their places carries ([`tag`](Self::tag)) and whose
    /// cap is its own.
    kind: Option<Kind>,
}

/// Where a declared kind's number sits in a place (a slot key) and in a
/// record's lease word: the bits above a slot's index, which is below
/// [`SLOTS_MAX`](crate::base::ids::SLOTS_MAX) (2^28), and below its
/// generation.
pub(in crate::store) const KIND_SHIFT: u32 = crate::base::ids::SLOTS_MAX.trailing_zeros();

/// The bits of a place that hold a kind's number.
pub(in crate::store) const KIND_BITS: u64 = ((KINDS_MAX as u64) - 1) << KIND_SHIFT;

// Every kind's number fits below a slot key's generation.
const _: () = assert!((KINDS_MAX as u64) << KIND_SHIFT <= 1 << 32);

/// `word` (a place or a lease's key, whose kind bits are zero) with
/// `kind`'s number in its kind bits.
pub(in crate::store) fn tagged(word: u64, kind: Kind) -> u64 {
    word | (kind.index() as u64) << KIND_SHIFT
}

impl std::fmt::Debug for LeaseChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.collection.name())
    }
}

impl LeaseChild {
    /// Streams: a lease keeps their names.
    pub(in crate::store) const STREAMS: LeaseChild = LeaseChild {
        collection: Collection::Streams,
        run: None,
        cap: |config| config.streams_per_lease_max,
        kind: None,
    };

    /// The records of declared kind `kind`, in the run of the records'
    /// collection.
    pub(in crate::store) fn of_kind(self, kind: Kind) -> LeaseChild {
        LeaseChild {
            kind: Some(kind),
            ..self
        }
    }

    /// The bits its places carry: its kind's number, for a declared
    /// kind's records; none for the other kinds.
    pub(in crate::store) fn tag(self) -> u64 {
        self.kind.map_or(0, |kind| tagged(0, kind))
    }

    /// The declared kind whose records these are, if they are.
    pub(in crate::store) fn kind(self) -> Option<Kind> {
        self.kind
    }

    /// A record kind a lease keeps by place, in the run its position in
    /// [`ON_LEASE`](crate::store::ON_LEASE) gives it: a kind missing there does
    /// not compile.
    const fn placed(collection: Collection, cap: fn(&StoreConfig) -> usize) -> LeaseChild {
        let mut run = 0;
        while run < crate::store::ON_LEASE.len() {
            if crate::store::ON_LEASE[run].collection as usize == collection as usize {
                return LeaseChild {
                    collection,
                    run: Some(run),
                    cap,
                    kind: None,
                };
            }
            run += 1;
        }
        panic!("a record kind a lease keeps by place is listed in ON_LEASE")
    }

    /// Its run among a lease's places; `None` for streams.
    pub(in crate::store) fn run(self) -> Option<usize> {
        self.run
    }

    pub(in crate::store) fn cap(self, config: &StoreConfig) -> usize {
        match self.kind {
            Some(kind) => config
                .kinds
                .get(kind.index())
                .map_or(0, |k| k.per_lease_max),
            None => (self.cap)(config),
        }
    }

    /// The scope a full list refuses with.
    pub(in crate::store) fn scope(self) -> Scope {
        match self.kind {
            Some(kind) => Scope::KindParent(kind),
            None => Scope::Parent(self.collection),
        }
    }
}

/// A record kind a lease keeps by place (listings, presence records,
/// locks): everything the lease's protocol needs of it, so that the
/// lease's list, its cascade and the audit are written once for every
/// such kind. A kind is one `impl` of this and a line in
/// [`ON_LEASE`](crate::store::ON_LEASE).
pub(in crate::store) trait OnLease: Child {
    /// Its collection.
    const COLLECTION: Collection;
    /// Its cap per lease.
    fn cap(config: &StoreConfig) -> usize;
    /// Its descriptor.
    const CHILD: LeaseChild = LeaseChild::placed(Self::COLLECTION, Self::cap);
    /// The lease the record hangs from, if any.
    fn lease_of(&self) -> Option<u64>;
    /// The key of the record at `place`, if it is still there.
    fn key_at(store: &Store, place: u64) -> Option<Self::Key>;
    /// The tenant of the record under `key`, and the name its lease's
    /// list knows it by in the audit (unique among the lease's children
    /// of its collection).
    #[cfg(any(test, feature = "internals"))]
    fn named(key: &Self::Key) -> (TenantId, Name);
}

/// A kind of [`OnLease`] as [`ON_LEASE`](crate::store::ON_LEASE) lists it.
pub(in crate::store) struct OnLeaseKind {
    pub(in crate::store) collection: Collection,
    /// Removes lease `seq`'s child at `place` and retires it (the
    /// records removed, itself included; none if the place holds
    /// another record now).
    pub(in crate::store) cascade: fn(&Store, u64, u64, &Why, MonoTime) -> usize,
    /// The table's records, its ceiling's count and its wheel entries.
    #[cfg(any(test, feature = "internals"))]
    pub(in crate::store) held: fn(&Store) -> (usize, u64, usize),
    /// The tenant and audit name ([`OnLease::named`]) of the record at a
    /// place, if it is still there.
    #[cfg(any(test, feature = "internals"))]
    pub(in crate::store) key_at: fn(&Store, u64) -> Option<(TenantId, Name)>,
    /// Each record's tenant, whether it is attached, its lease and its
    /// name.
    #[cfg(any(test, feature = "internals"))]
    pub(in crate::store) each: fn(&Store, &mut EachChild<'_>),
}

/// What [`OnLeaseKind::each`] is told of each record: its tenant, whether
/// it is attached, its lease and its name.
#[cfg(any(test, feature = "internals"))]
pub(in crate::store) type EachChild<'a> = dyn FnMut(TenantId, bool, Option<u64>, &Name) + 'a;

impl OnLeaseKind {
    pub(in crate::store) const fn of<K: OnLease>() -> OnLeaseKind {
        OnLeaseKind {
            collection: K::COLLECTION,
            cascade: cascade::<K>,
            #[cfg(any(test, feature = "internals"))]
            held: |store| {
                let table = K::table(store);
                (table.len(), table.ceiling().used(), table.scheduled())
            },
            #[cfg(any(test, feature = "internals"))]
            key_at: |store, place| K::key_at(store, place).map(|key| K::named(&key)),
            #[cfg(any(test, feature = "internals"))]
            each: |store, f| {
                K::table(store).for_each(|key, v, _| {
                    let (tenant, name) = K::named(key);
                    f(tenant, v.attached(), v.lease_of(), &name)
                })
            },
        }
    }
}

/// Removes lease `seq`'s child of kind `K` at `at`, read by its name at
/// its place: a record that left the place meanwhile is gone, or another
/// record (not this lease's).
fn cascade<K: OnLease>(store: &Store, at: u64, seq: u64, why: &Why, now: MonoTime) -> usize {
    let Some(key) = K::key_at(store, at) else {
        return 0;
    };
    let removed = K::table(store).remove_placed(
        &key,
        |v, _, _| owned_by(v.lease_of() == Some(seq)),
        now,
        |&place| place,
    );
    match removed {
        Ok((place, child)) => 1 + K::retire(store, place, child, why.clone(), now, false),
        Err(_) => 0,
    }
}

/// A child as its lease's list names it: a record by its place, a stream
/// by its name.
#[derive(Clone, Copy, Debug)]
pub(in crate::store) enum ChildOf<'a> {
    Place(u64),
    Stream(&'a str),
}

/// Where a new record hangs. A listing parent is named by the caller's
/// borrowed name: its slot is taken, confirmed and given back without an
/// owned key.
pub(in crate::store) enum Parent<'n> {
    /// Nowhere: a lease, or presence or a lock without a lease.
    None,
    /// In lease `seq`'s list of `kind`, a record kind: a slot taken
    /// first, confirmed with the record's place once it is inserted.
    Lease { seq: u64, kind: LeaseChild },
    /// In lease `seq`'s list of streams, as `name` (a stream is no slab
    /// record).
    LeaseStream { seq: u64, name: Name },
    /// In the attempts of the visible listing under `key` (a tenant and
    /// the caller's name), as `child`. Taking the slot finds the listing's
    /// publication and records it in `origin`, where the new record reads
    /// it; confirming and giving the slot back check it (ADR 0045).
    Listing {
        key: (TenantId, &'n str),
        origin: &'n Cell<u64>,
        child: u64,
    },
}

impl Parent<'_> {
    /// Takes a slot in the parent's index of children: refused if the
    /// parent is not visible or its cap is reached. The narrow scope every
    /// child is decided by first. A listing's slot is taken in its one
    /// visit before the creation's insert: the same write also reads the
    /// publication, and the listing's lease is checked after, with the
    /// slot held (given back if that lease is gone).
    pub(in crate::store) fn reserve(
        &self,
        store: &Store,
        tenant: TenantId,
        now: MonoTime,
    ) -> Result<()> {
        match self {
            Parent::None => Ok(()),
            Parent::Lease { seq, kind } => store.take_lease_slot(tenant, *seq, *kind, None, now),
            Parent::LeaseStream { seq, name } => {
                store.take_lease_slot(tenant, *seq, LeaseChild::STREAMS, Some(name), now)
            }
            Parent::Listing { key, origin, child } => {
                store.take_listing_slot(*key, origin, *child, now)
            }
        }
    }

    /// Whether the slot is still in a parent that is still there, under the
    /// parent's shard lock (see rule 3); a lease's slot for a record
    /// becomes the record's `place` (the key of its slot, which a stream
    /// has none of). A stream's or an attempt's slot was pushed last, so
    /// the search starts from the end (one comparison unless another
    /// creation took a slot since).
    pub(in crate::store) fn confirm(&self, store: &Store, place: Option<u64>) -> Result<()> {
        let held = match (self, place) {
            (Parent::None, _) => Some(true),
            (Parent::Lease { seq, kind }, Some(place)) => {
                store.confirm_lease_slot(*seq, *kind, ChildOf::Place(place))
            }
            (Parent::Lease { .. }, None) => Some(false),
            (Parent::LeaseStream { seq, name }, _) => {
                store.confirm_lease_slot(*seq, LeaseChild::STREAMS, ChildOf::Stream(name))
            }
            (Parent::Listing { key, origin, child }, _) => {
                store.holds_listing_slot(*key, origin.get(), *child)
            }
        };
        match (held, self) {
            (Some(true), _) => Ok(()),
            (_, Parent::Listing { .. }) => Err(Error::NotFound),
            _ => Err(Error::Revoked),
        }
    }

    /// Gives the slot back: a lease's slot for a record as it was taken,
    /// or as the `place` it was confirmed with.
    pub(in crate::store) fn release(&self, store: &Store, place: Option<u64>) {
        match self {
            Parent::None => {}
            Parent::Lease { seq, kind } => {
                store.give_lease_slot(*seq, *kind, place.map(ChildOf::Place))
            }
            Parent::LeaseStream { seq, name } => {
                store.give_lease_slot(*seq, LeaseChild::STREAMS, Some(ChildOf::Stream(name)))
            }
            Parent::Listing { key, origin, child } => {
                store.give_listing_slot(*key, origin.get(), *child)
            }
        }
    }
}

/// What an insert found under a key it could not take.
pub(in crate::store) enum Occupant {
    /// A visible record: the key is genuinely taken.
    Visible,
    /// A record being created right now (not yet visible): retry shortly.
    InFlight,
    /// An invisible record, now removed (or the key freed meanwhile).
    Cleared,
}

/// Everything a creation has taken so far; undone on drop unless
/// committed (rollback on refusal, error and panic alike).
struct Pending<'s, 'e, C: Child> {
    store: &'s Store,
    now: MonoTime,
    /// The tenant epoch the record is made in; `held` while this creation
    /// owns a unit of the tenant's holds.
    epoch: &'e Arc<Epoch>,
    held: bool,
    parent: Parent<'e>,
    slot: bool,
    /// How many of `C::QUOTAS` are held.
    quotas: usize,
    shared: Option<&'s Counter>,
    /// A declared kind's unit in the tenant's count of its records, and
    /// in the store's.
    kind_tenant: Option<&'e Counter>,
    kind_shared: Option<&'s Counter>,
    /// The key and version of the inserted, not yet attached record.
    inserted: Option<(C::Key, u64)>,
    /// The place the parent's slot was confirmed with, if it was.
    confirmed: Option<u64>,
    /// The holder counted against its per-holder quota (`C::HOLDER_QUOTA`).
    holder: Option<Holder>,
}

impl<C: Child> Pending<'_, '_, C> {
    /// The record owns everything now.
    fn commit(&mut self) {
        self.held = false;
        self.slot = false;
        self.quotas = 0;
        self.shared = None;
        self.kind_tenant = None;
        self.kind_shared = None;
        self.inserted = None;
        self.holder = None;
    }
}

impl<C: Child> Drop for Pending<'_, '_, C> {
    fn drop(&mut self) {
        if let Some((key, version)) = self.inserted.take() {
            // Never attached, so never visible and never counted by a
            // removal path: the record and its units are this guard's.
            let _ = C::table(self.store).remove_with(
                &key,
                |v, s, _| owned_by(s.version == version && !v.attached()),
                self.now,
            );
        }
        if let Some(shared) = self.shared.take() {
            shared.release(1);
        }
        for counter in [self.kind_shared.take(), self.kind_tenant.take()]
            .into_iter()
            .flatten()
        {
            counter.release(1);
        }
        for &c in &C::QUOTAS[..self.quotas] {
            self.epoch.tenant.quota(c).release(1);
        }
        if let (Some(holder), Some(c)) = (self.holder.take(), C::HOLDER_QUOTA) {
            self.epoch.tenant.release_holder(&holder, c);
        }
        if self.slot {
            self.parent.release(self.store, self.confirmed);
        }
        // The hold goes last: giving it back may forget the tenant.
        if self.held {
            self.store.release_tenant(&self.epoch.tenant, self.epoch.id);
        }
    }
}

impl Store {
    /// Creates a record of kind `C` under `key` for `tenant`, live until
    /// `deadline`, hanging from `parent`, following the protocol in this
    /// module's docs. `make` builds the record from its owner and the
    /// version it gets (a lock's fence is its version), once, so it may
    /// move what the record keeps. Returns the record's stamp.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::store) fn create<C: Child>(
        &self,
        tenant: TenantId,
        key: C::Key,
        parent: Parent<'_>,
        now: MonoTime,
        deadline: u64,
        make: impl FnOnce(Owner, u64) -> C,
    ) -> Result<Stamp> {
        self.create_then(tenant, key, parent, None, now, deadline, make, &mut || {
            Ok(())
        })
    }

    /// [`create`](Self::create), running `then` once a child is inserted
    /// and confirmed, just before it is attached (made visible): a
    /// transaction's commit applies the rest of its changes there, and
    /// refuses the creation (which then undoes every step) if they fail.
    /// `holder` names the holder to count the record against when its
    /// tenant counts `C::HOLDER_QUOTA` per holder (asked only then).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::store) fn create_then<C: Child>(
        &self,
        tenant: TenantId,
        key: C::Key,
        parent: Parent<'_>,
        holder: Option<&dyn Fn() -> Option<Holder>>,
        now: MonoTime,
        deadline: u64,
        make: impl FnOnce(Owner, u64) -> C,
        then: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Stamp> {
        let created = self.create_steps(tenant, key, parent, holder, now, deadline, make, then);
        if created.is_ok() {
            crate::contract::metrics::admission(
                crate::contract::metrics::EngineLabel::Memory,
                C::QUOTAS[0],
            );
        }
        self.observed(tenant, created)
    }

    /// The steps of [`create`](Self::create), in the order this module's
    /// rules give.
    #[allow(clippy::too_many_arguments)]
    fn create_steps<C: Child>(
        &self,
        tenant: TenantId,
        key: C::Key,
        parent: Parent<'_>,
        holder: Option<&dyn Fn() -> Option<Holder>>,
        now: MonoTime,
        deadline: u64,
        make: impl FnOnce(Owner, u64) -> C,
        then: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Stamp> {
        self.admit_new(now)?;
        let hold = match parent {
            // A child's parent holds the tenant: nothing to register, and a
            // tenant that holds nothing has no parent to offer.
            Parent::None => self.hold_tenant(tenant, C::QUOTAS)?,
            _ => self
                .hold_known_tenant(tenant)
                .ok_or_else(|| self.missing_parent(&parent, tenant, now))?,
        };
        // The creation owns the hold's unit from here on (`held`).
        let epoch = hold.into_epoch();
        let mut pending = Pending::<C> {
            store: self,
            now,
            epoch: &epoch,
            held: true,
            parent,
            slot: false,
            quotas: 0,
            shared: None,
            kind_tenant: None,
            kind_shared: None,
            inserted: None,
            confirmed: None,
            holder: None,
        };
        let table = C::table(self);
        // Every store-wide limit this creation checks, from one snapshot:
        // a reconfiguration running meanwhile is seen whole or not at all.
        let shared = C::shared(self);
        let word = |c: &Counter| Limits::word_of(c.scope());
        let (shared_at, ceiling_at) = (shared.and_then(word), word(table.ceiling()));
        let [shared_word, ceiling_word] = self
            .shared
            .limits
            .read_words([shared_at.unwrap_or(0), ceiling_at.unwrap_or(0)]);
        // A scope the snapshot does not hold keeps its counter's limit.
        let of = |c: &Counter, at: Option<usize>, word| at.map_or_else(|| c.limit(), |_| word);
        let (shared_limit, ceiling) = (
            shared.map(|c| of(c, shared_at, shared_word)),
            of(table.ceiling(), ceiling_at, ceiling_word),
        );
        let (shared_limit, ceiling) = if decide::limits_read_apart() {
            // Broken twin: each limit read from its counter, as a
            // reconfiguration updates them one after another.
            (shared.map(Counter::limit), table.ceiling().limit())
        } else {
            (shared_limit, ceiling)
        };
        // The broken twin of the model checker holds a unit of the shared
        // ceiling while the narrow scopes are decided (the order this
        // protocol exists to forbid); elsewhere this is `None`.
        let early = decide::shared_scope_first()
            .then(|| Reservation::acquire(&[(table.ceiling(), 1)]))
            .transpose()?;
        // Narrow scopes: the parent's cap, then the tenant's quotas.
        pending.parent.reserve(self, tenant, now)?;
        pending.slot = true;
        // The holder's quota, narrower than the tenant's: counted only for
        // a tenant that registered with it on.
        if let (Some(c), Some(holder)) = (C::HOLDER_QUOTA, holder) {
            if epoch.tenant.counts_per_holder(c) {
                if let Some(holder) = holder() {
                    if epoch.tenant.acquire_holder(&holder, c)? {
                        pending.holder = Some(holder);
                    }
                }
            }
        }
        let counted_holder = pending.holder.clone();
        // The tenant's quotas, also from one snapshot (its current ones).
        let quotas = epoch.tenant.limits(C::QUOTAS);
        for (&c, limit) in C::QUOTAS.iter().zip(quotas) {
            epoch.tenant.quota(c).acquire_under(1, limit)?;
            pending.quotas += 1;
        }
        let kind = C::kind_counters(self, &epoch.tenant, &key);
        if let Some((in_tenant, _)) = kind {
            in_tenant.acquire(1)?;
            pending.kind_tenant = Some(in_tenant);
        }
        drop(early);
        seam::after(seam::Step::Reserved);
        // Shared scopes: store-wide counters, then the table's ceiling.
        if let (Some(shared), Some(limit)) = (shared, shared_limit) {
            shared.acquire_under(1, limit)?;
            pending.shared = Some(shared);
        }
        if let Some((_, in_store)) = kind {
            in_store.acquire(1)?;
            pending.kind_shared = Some(in_store);
        }
        let born = matches!(pending.parent, Parent::None);
        // The insert below runs at most twice, and builds the record only
        // in the run that stores it (then the loop ends): `make` is called
        // once, so it may move the caller's values into the record.
        let make = Cell::new(Some(make));
        let build = |version| {
            let make = make.take().expect("a creation builds its record once");
            let mut record = make(Owner::of(&epoch), version);
            if born {
                record.set_attached();
            }
            if let Some(holder) = &counted_holder {
                record.count_holder(holder.clone());
            }
            record
        };
        let mut tries = 0;
        let insert = || table.insert_placed(key.clone(), &build, now, deadline, ceiling, |&p| p);
        let (stamp, place, replaced) = loop {
            tries += 1;
            let inserted = match C::INDEX.filter(|_| born) {
                Some(put) => {
                    let mut index = lock_at(Rung::TenantIndex, &epoch.tenant.index);
                    let inserted = insert();
                    if let Ok((_, place, _)) = &inserted {
                        put(*place, &mut index);
                    }
                    inserted
                }
                None => insert(),
            };
            match inserted {
                Ok(done) => break done,
                Err(taken @ Error::Conflict { .. }) => {
                    match self.occupant::<C>(tenant, &key, now) {
                        Occupant::Visible => return Err(taken),
                        Occupant::InFlight => return Err(Error::InFlight),
                        Occupant::Cleared if tries < 2 => {}
                        // Taken at each try, if only briefly: the key was
                        // held when this insert ran.
                        Occupant::Cleared => return Err(taken),
                    }
                }
                Err(e) => return Err(e),
            }
        };
        if born {
            // Visible and indexed: the record owns its units from here on.
            pending.commit();
        }
        if let Some(old) = replaced {
            // An expired record under the same key, in the same place: its
            // retirement takes the place out of the tenant's index, where
            // a record born attached has just put it back.
            C::retire(self, place, old, Cause::Expired.into(), now, true);
            if let Some(put) = C::INDEX.filter(|_| born) {
                put(place, &mut lock_at(Rung::TenantIndex, &epoch.tenant.index));
            }
        }
        let version = stamp.version;
        if !born {
            pending.inserted = Some((key.clone(), version));
            seam::after(seam::Step::Inserted);
            pending.parent.confirm(self, Some(place))?;
            pending.confirmed = Some(place);
            seam::after(seam::Step::Confirmed);
            then()?;
            let mut index =
                C::INDEX.map(|put| (put, lock_at(Rung::TenantIndex, &epoch.tenant.index)));
            table
                .update(&key, now, None, |v, s| {
                    owned_by(s.version == version && !v.attached())?;
                    v.set_attached();
                    Ok(((), None))
                })
                .map_err(|_| Error::Revoked)?;
            // The record attached is the one inserted (at `version`), so
            // still in the place its insert answered.
            if let Some((put, index)) = index.as_mut() {
                put(place, index);
            }
        }
        pending.commit();
        drop(pending);
        seam::after(seam::Step::Committed);
        if decide::stop_checked() && self.is_stopped() {
            let taken = table.remove_placed(
                &key,
                |v, _, _| owned_by(v.made_at(version)),
                now,
                |&place| place,
            );
            if let Ok((place, r)) = taken {
                C::retire(self, place, r, Cause::Drained.into(), now, true);
            }
            return Err(Error::STOPPED);
        }
        Ok(stamp)
    }

    /// What a child whose tenant holds nothing answers: its parent is
    /// missing (or, for a lease, revoked while its tombstone lives).
    fn missing_parent(&self, parent: &Parent<'_>, tenant: TenantId, now: MonoTime) -> Error {
        match parent {
            Parent::Lease { seq, .. } => self.gone(tenant, *seq, now),
            _ => Error::NotFound,
        }
    }

    /// What holds `key`: a visible record, a creation in flight, or a
    /// record no longer visible, which is removed so the key can be reused.
    pub(in crate::store) fn occupant<C: Child>(
        &self,
        tenant: TenantId,
        key: &C::Key,
        now: MonoTime,
    ) -> Occupant {
        let table = C::table(self);
        let seen = table.read(key, now, |v, s| (v.attached(), v.ancestry(), s.version));
        let (ancestry, version) = match seen {
            Ok((true, ancestry, version)) => (ancestry, version),
            Ok((false, ..)) => return Occupant::InFlight,
            // Expired or gone since the insert refused: free to retry.
            Err(_) => return Occupant::Cleared,
        };
        if decide::key_taken(self.ancestors_visible(tenant, &ancestry, now)) {
            return Occupant::Visible;
        }
        let taken = table.remove_placed(
            key,
            |_, s, _| owned_by(s.version == version),
            now,
            |&place| place,
        );
        if let Ok((place, removed)) = taken {
            C::retire(self, place, removed, Cause::Cascaded.into(), now, true);
        }
        Occupant::Cleared
    }
}

/// Where a panic, or another operation, can enter a creation: a test
/// build can make any step boundary panic, to check that the guard rolls
/// back everything taken so far, or run a closure there, to put a race at
/// a chosen point. In other builds every call is an empty inline function. (The model
/// checker's twins of the protocol's decisions enter through `decide`.)
pub(in crate::store) mod seam {
    /// A boundary between two steps of the protocol.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Step {
        /// The narrow scopes are taken, nothing shared yet.
        Reserved,
        /// The record is in its table, invisible.
        Inserted,
        /// The parent slot is confirmed; the record is not yet attached.
        Confirmed,
        /// The record is visible and owns its units.
        Committed,
    }

    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) fn after(_step: Step) {}

    #[cfg(test)]
    std::thread_local! {
        static PANIC_AFTER: std::cell::Cell<Option<Step>> = const { std::cell::Cell::new(None) };
    }

    /// Makes the next creation on this thread panic after `step`.
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn panic_after(step: Option<Step>) {
        PANIC_AFTER.with(|p| p.set(step));
    }

    /// A closure the next creation on this thread runs after a step.
    #[cfg(test)]
    type Interleaved = Option<(Step, Box<dyn FnOnce()>)>;

    #[cfg(test)]
    std::thread_local! {
        static RUN_AFTER: std::cell::RefCell<Interleaved> = const { std::cell::RefCell::new(None) };
    }

    /// Makes the next creation on this thread run `run` after `step`.
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn run_after(step: Step, run: impl FnOnce() + 'static) {
        RUN_AFTER.with(|r| *r.borrow_mut() = Some((step, Box::new(run))));
    }

    #[cfg(test)]
    pub(crate) fn after(step: Step) {
        if PANIC_AFTER.with(|p| p.get()) == Some(step) {
            PANIC_AFTER.with(|p| p.set(None));
            panic!("injected panic after {step:?}");
        }
        let run = RUN_AFTER.with(|r| {
            let mut r = r.borrow_mut();
            match r.take() {
                Some((at, run)) if at == step => Some(run),
                other => {
                    *r = other;
                    None
                }
            }
        });
        if let Some(run) = run {
            run();
        }
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::seam::{panic_after, Step};
    use crate::base::error::Error;
    use crate::base::ids::TenantId;
    use crate::base::time::ManualClock;
    use crate::contract::config::StoreConfig;
    use crate::store::Store;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::Arc;
    use std::time::Duration;

    const T: TenantId = TenantId(1);
    const TTL: Duration = Duration::from_secs(60);

    /// Runs `create` with a panic injected after `step`; afterwards the
    /// store must be exactly as before (audit, stats, digest), and the same
    /// creation must then succeed (nothing left answering `InFlight`).
    fn rolls_back(step: Step, create: impl Fn(&Store) -> Result<(), Error>) {
        let s = Store::new(one_kind(), Arc::new(ManualClock::new())).unwrap();
        let lease = s.grant(T, "h", TTL, None).unwrap().id;
        s.publish(T, lease, "lobby", b"", None).unwrap();
        let setup = |s: &Store| {
            let _ = s.try_lock(T, "l-setup", "w", TTL, Some(lease));
        };
        setup(&s);
        let before = (s.stats(), s.digest());
        panic_after(Some(step));
        let outcome = catch_unwind(AssertUnwindSafe(|| create(&s)));
        panic_after(None);
        assert!(outcome.is_err(), "no panic was injected after {step:?}");
        s.audit().unwrap_or_else(|e| panic!("after {step:?}: {e}"));
        assert_eq!((s.stats(), s.digest()), before, "after {step:?}");
        create(&s).unwrap_or_else(|e| panic!("retry after a panic at {step:?}: {e}"));
        s.audit().unwrap();
    }

    /// The default limits and one declared kind, which holds one record
    /// in all: a unit a creation kept would refuse the next one.
    fn one_kind() -> StoreConfig {
        let kind = crate::contract::kinds::RecordKind::new("perm")
            .per_tenant_max(1)
            .max(1);
        StoreConfig::default().declare(kind)
    }

    fn perm() -> crate::base::collection::Kind {
        crate::base::collection::Kind::at(0).unwrap()
    }

    fn lease_of(s: &Store) -> crate::base::ids::LeaseId {
        s.get_listing(T, "lobby").unwrap().lease
    }

    #[test]
    fn a_panic_at_any_step_of_a_creation_leaves_nothing_behind() {
        for step in [Step::Reserved, Step::Inserted, Step::Confirmed] {
            rolls_back(step, |s| {
                s.publish(T, lease_of(s), "lobby-2", b"", None).map(drop)
            });
            rolls_back(step, |s| {
                s.heartbeat(T, "m", TTL, None, Some(lease_of(s))).map(drop)
            });
            rolls_back(step, |s| {
                let guard = s.try_lock(T, "l", "w", TTL, Some(lease_of(s)))?;
                guard.map(drop).ok_or(Error::InFlight)
            });
            rolls_back(step, |s| s.begin_join(T, "lobby", "c", TTL, None).map(drop));
            rolls_back(step, |s| {
                s.put_record(T, perm(), lease_of(s), "r", TTL, None)
                    .map(drop)
            });
        }
        // Records without a parent are visible from their insert on: only
        // the step before it can roll back.
        rolls_back(Step::Reserved, |s| s.grant(T, "h", TTL, None).map(drop));
        rolls_back(Step::Reserved, |s| {
            s.heartbeat(TenantId(2), "m", TTL, None, None).map(drop)
        });
    }

    #[test]
    fn a_creation_that_is_refused_or_panics_gives_its_slot_back() {
        let config = StoreConfig {
            tenant: crate::contract::config::TenantQuota {
                leases_max: 1,
                ..crate::contract::config::TenantQuota::default()
            },
            ..StoreConfig::default()
        };
        let s = Store::new(config, Arc::new(ManualClock::new())).unwrap();
        let lease = s.grant(T, "h", TTL, None).unwrap().id;
        s.publish(T, lease, "lobby", b"", None).unwrap();
        for _ in 0..10 {
            let refused = s.grant(T, "h", TTL, None);
            assert!(matches!(refused, Err(Error::CapacityExceeded { .. })));
        }
        for step in [Step::Reserved, Step::Inserted, Step::Confirmed] {
            panic_after(Some(step));
            let joined = catch_unwind(AssertUnwindSafe(|| {
                s.begin_join(T, "lobby", "c", TTL, None)
            }));
            panic_after(None);
            assert!(joined.is_err(), "no panic was injected after {step:?}");
        }
        panic_after(Some(Step::Reserved));
        let granted = catch_unwind(AssertUnwindSafe(|| s.grant(TenantId(2), "h", TTL, None)));
        panic_after(None);
        assert!(granted.is_err());
        // The lease needed a slot; every failed grant used one more and
        // gave it back, as did every failed join.
        assert_eq!(s.shared.leases.slots(), 2);
        assert_eq!(s.shared.attempts.slots(), 1);
        s.audit().unwrap();
    }

    /// A lease revoked while a child is created under it, at each step
    /// of the creation (rule 3): before the confirmation the revocation
    /// cannot see the child, so the creation refuses and takes it back;
    /// after it, the cascade finds the child's place and removes it. Either
    /// way nothing is left and the name is free.
    #[test]
    fn a_lease_revoked_during_a_childs_creation_leaves_nothing() {
        use super::seam::run_after;
        for step in [Step::Reserved, Step::Inserted, Step::Confirmed] {
            let s = Store::new(StoreConfig::default(), Arc::new(ManualClock::new())).unwrap();
            let lease = s.grant(T, "h", TTL, None).unwrap().id;
            let revoker = s.clone();
            run_after(step, move || revoker.revoke(T, lease).unwrap());
            let made = s.heartbeat(T, "m", TTL, None, Some(lease));
            assert_eq!(
                made.map(drop),
                Err(Error::Revoked),
                "revoked after {step:?}"
            );
            assert_eq!(
                s.get_presence(T, "m"),
                Err(Error::NotFound),
                "after {step:?}"
            );
            assert_eq!(s.stats().presence, 0, "after {step:?}");
            s.audit().unwrap_or_else(|e| panic!("after {step:?}: {e}"));
            s.heartbeat(T, "m", TTL, None, None)
                .unwrap_or_else(|e| panic!("the name after {step:?}: {e}"));
        }
        // A declared record, whose kind holds one record in all: its units
        // come back whichever way the creation ended.
        for step in [Step::Reserved, Step::Inserted, Step::Confirmed] {
            let s = Store::new(one_kind(), Arc::new(ManualClock::new())).unwrap();
            let lease = s.grant(T, "h", TTL, None).unwrap().id;
            let revoker = s.clone();
            run_after(step, move || revoker.revoke(T, lease).unwrap());
            let made = s.put_record(T, perm(), lease, "r", TTL, None);
            assert_eq!(
                made.map(drop),
                Err(Error::Revoked),
                "revoked after {step:?}"
            );
            assert_eq!(s.stats().records, 0, "after {step:?}");
            s.audit().unwrap_or_else(|e| panic!("after {step:?}: {e}"));
            let again = s.grant(T, "h", TTL, None).unwrap().id;
            s.put_record(T, perm(), again, "r", TTL, None)
                .unwrap_or_else(|e| panic!("the kind's unit after {step:?}: {e}"));
        }
    }

    #[test]
    fn a_panic_after_the_commit_leaves_a_whole_record() {
        let s = Store::new(StoreConfig::default(), Arc::new(ManualClock::new())).unwrap();
        let lease = s.grant(T, "h", TTL, None).unwrap().id;
        panic_after(Some(Step::Committed));
        let outcome = catch_unwind(AssertUnwindSafe(|| s.publish(T, lease, "x", b"", None)));
        assert!(outcome.is_err());
        s.audit().unwrap();
        assert!(s.get_listing(T, "x").is_ok());
    }
}
