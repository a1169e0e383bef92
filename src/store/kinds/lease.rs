//! Leases: TTL-bound grants that other records attach to.

use crate::base::error::{Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Holder;
use crate::base::name::Name;
use crate::base::sync::Arc;
use crate::base::sync::{AtomicU64, Ordering};
use crate::base::time::MonoTime;
use crate::contract::events::Cause;
use crate::contract::events::{RecordId, Root};
use crate::contract::relay::EndpointSeen;
use crate::contract::relay::LeaseGrant;
use crate::contract::relay::LeaseInfo;
use crate::contract::relay::{Cursor, Page};
use crate::mem::record::{Head, Stamp, State};
use crate::mem::slab::Slab;
use crate::mem::table::{Beside, SlotWords};
use crate::mem::table::{Removed, SlabTable};
use crate::store::kinds::idempotency::{IdemParams, Outcome};
use crate::store::protocol::attach::{Child, ChildOf, LeaseChild, Parent, KIND_BITS};
use crate::store::protocol::decide;
use crate::store::protocol::retire::Stored;
use crate::store::protocol::retire::Why;
use crate::store::protocol::visible::Ancestry;
use crate::store::tenant::Owner;
use crate::store::tenant::Revocations;
use crate::store::{Collection, IdKey, Renewal, Store, ON_LEASE};
use std::cell::Cell;
use std::net::SocketAddr;
use std::time::Duration;

/// Slots of the lease slab one [`Store::list_leases`] call looks at, per
/// lease it may return (the slab holds every tenant's leases).
pub const LEASE_SLOTS_PER_ITEM: u32 = 64;

pub(crate) struct Lease {
    pub(in crate::store) owner: Owner,
    pub(in crate::store) holder: Holder,
    /// Children and observed endpoints, allocated on first use: most leases
    /// have few or none, and keeping four vectors inline would more than
    /// double every lease's map entry, on the renew hot path.
    pub(in crate::store) children: Option<Box<LeaseChildren>>,
}

/// What hangs off a lease: its child records' places, in one vector of
/// one run per kind, its streams' names, and its observed endpoints. A
/// child record is named by its place (the slot key that names it for
/// good, a word), where its name is its record's to keep; a stream is no
/// slab record, so it is named by its name.
#[derive(Default)]
pub(crate) struct LeaseChildren {
    /// The runs, listings, locks and members ([`run`](Self::run)):
    /// members last, the kind a lease holds most of (at most
    /// `presence_per_lease_max`), so a new child of another kind moves few
    /// places. A slot taken by a creation that has not confirmed its
    /// record yet (whose place is known only once it is inserted) is
    /// [`PENDING`] in its run.
    places: Vec<u64>,
    /// Where each run ends in `places`.
    ends: [u32; ON_LEASE.len()],
    /// Its streams' names and its observed endpoints, boxed: most leases
    /// have neither, and the box is one word where the two vectors are
    /// six.
    rare: Option<Box<Rare>>,
}

/// What few leases have ([`LeaseChildren::rare`]).
#[derive(Default)]
struct Rare {
    /// The streams' names.
    streams: Vec<Name>,
    /// Observed public endpoints (at most `endpoints_per_lease_max`).
    endpoints: Vec<(SocketAddr, MonoTime)>,
}

/// A slot in a lease's list taken and not yet confirmed: no slot key is
/// zero (a slot's generation starts at one). A declared kind's pending
/// slot carries its kind's number ([`LeaseChild::tag`]).
const PENDING: u64 = 0;

/// Whether a place in a lease's list is a pending slot: its generation
/// is zero, whatever kind's number it carries.
fn is_pending(place: u64) -> bool {
    place >> 32 == 0
}

impl LeaseChildren {
    /// Room made at once while the vector is short; past it, it doubles.
    const GROWN_ONE_BY_ONE: usize = 8;

    /// Which run is `kind`'s; `None` for streams, kept by name.
    fn run(kind: LeaseChild) -> Option<usize> {
        kind.run()
    }

    /// Where run `run` is in `places`.
    fn span_of(&self, run: usize) -> std::ops::Range<usize> {
        let start = run.checked_sub(1).map_or(0, |before| self.ends[before]);
        start as usize..self.ends[run] as usize
    }

    /// Where `kind`'s run is in `places` (empty for streams).
    fn span(&self, kind: LeaseChild) -> std::ops::Range<usize> {
        Self::run(kind).map_or(0..0, |run| self.span_of(run))
    }

    /// The places of the confirmed children in run `run` (a declared
    /// kind's without the kind's number they carry here).
    pub(in crate::store) fn places_of_run(&self, run: usize) -> impl Iterator<Item = u64> + '_ {
        self.places[self.span_of(run)]
            .iter()
            .filter(|&&p| !is_pending(p))
            .map(|&p| p & !KIND_BITS)
    }

    /// The places of the confirmed children of `kind` (none for streams:
    /// [`streams`](Self::streams)).
    pub(in crate::store) fn places(&self, kind: LeaseChild) -> impl Iterator<Item = u64> + '_ {
        let tag = kind.tag();
        self.places[self.span(kind)]
            .iter()
            .filter(move |&&p| !is_pending(p) && p & KIND_BITS == tag)
            .map(|&p| p & !KIND_BITS)
    }

    /// Slots taken by creations not yet confirmed, of every kind (for
    /// the audit: a store at rest has none).
    #[cfg(any(test, feature = "internals"))]
    pub(in crate::store) fn pending_slots(&self) -> usize {
        self.places.iter().filter(|&&p| is_pending(p)).count()
    }

    /// The streams' names.
    pub(in crate::store) fn streams(&self) -> &[Name] {
        self.rare.as_deref().map_or(&[], |rare| &rare.streams)
    }

    /// The observed endpoints.
    fn endpoints(&self) -> &[(SocketAddr, MonoTime)] {
        self.rare.as_deref().map_or(&[], |rare| &rare.endpoints)
    }

    fn endpoints_mut(&mut self) -> &mut Vec<(SocketAddr, MonoTime)> {
        &mut self.rare.get_or_insert_with(Default::default).endpoints
    }

    /// The slots of `kind` taken: its children and its creations not yet
    /// confirmed (of a declared kind, those carrying its number).
    fn held(&self, kind: LeaseChild) -> usize {
        match (Self::run(kind), kind.kind()) {
            (Some(_), None) => self.span(kind).len(),
            (Some(_), Some(_)) => {
                let tag = kind.tag();
                self.places[self.span(kind)]
                    .iter()
                    .filter(|&&p| p & KIND_BITS == tag)
                    .count()
            }
            (None, _) => self.streams().len(),
        }
    }

    /// Puts `entry` at the end of `kind`'s run, with its kind's number.
    fn push(&mut self, kind: LeaseChild, entry: u64) {
        let Some(run) = Self::run(kind) else {
            return;
        };
        if self.places.len() == self.places.capacity() {
            let more = if self.places.len() < Self::GROWN_ONE_BY_ONE {
                1
            } else {
                self.places.len()
            };
            self.places.reserve_exact(more);
        }
        self.places
            .insert(self.ends[run] as usize, entry | kind.tag());
        for end in &mut self.ends[run..] {
            *end += 1;
        }
    }

    /// Takes the last `entry` of `kind` out of `kind`'s run, if it is
    /// there.
    fn remove(&mut self, kind: LeaseChild, entry: u64) {
        let (Some(run), span) = (Self::run(kind), self.span(kind)) else {
            return;
        };
        let entry = entry | kind.tag();
        if let Some(i) = self.places[span.clone()].iter().rposition(|&p| p == entry) {
            self.places.remove(span.start + i);
            for end in &mut self.ends[run..] {
                *end -= 1;
            }
        }
    }

    /// Takes a slot of record kind `kind` for a creation, to be confirmed
    /// with its place ([`confirm`](Self::confirm)) or given back.
    fn reserve(&mut self, kind: LeaseChild) {
        self.push(kind, PENDING);
    }

    /// Turns one of `kind`'s pending slots into `place`; false if none is
    /// pending.
    fn confirm(&mut self, kind: LeaseChild, place: u64) -> bool {
        let (span, tag) = (self.span(kind), kind.tag());
        match self.places[span].iter_mut().find(|p| **p == PENDING | tag) {
            Some(slot) => {
                *slot = place | tag;
                true
            }
            None => false,
        }
    }

    /// Gives back a pending slot of `kind` that was never confirmed.
    fn give_back(&mut self, kind: LeaseChild) {
        self.remove(kind, PENDING);
    }

    /// Takes `place` out of `kind`'s run, if it is there.
    fn remove_place(&mut self, kind: LeaseChild, place: u64) {
        if !is_pending(place) {
            self.remove(kind, place);
        }
    }

    /// Adds a stream's name.
    fn push_stream(&mut self, name: Name) {
        self.rare
            .get_or_insert_with(Default::default)
            .streams
            .push(name);
    }

    /// Takes the last entry of stream `name` out, if any: one, not all (a
    /// creation of the same name in flight may hold another, its own to
    /// give back or confirm).
    fn remove_stream(&mut self, name: &str) {
        if let Some(rare) = self.rare.as_mut() {
            if let Some(i) = rare.streams.iter().rposition(|n| &**n == name) {
                rare.streams.remove(i);
            }
            if rare.streams.is_empty() && rare.endpoints.is_empty() {
                self.rare = None;
            }
        }
    }
}

/// Pushes onto a lease's list of endpoints, growing it by doubling from
/// one (a vector's own first growth makes room for four).
fn push_small<T>(list: &mut Vec<T>, item: T) {
    if list.len() == list.capacity() {
        list.reserve_exact(list.capacity().max(1));
    }
    list.push(item);
}

impl Lease {
    pub(in crate::store) fn children_mut(&mut self) -> &mut LeaseChildren {
        self.children.get_or_insert_with(Default::default)
    }

    /// Takes child `child` out of its list (bookkeeping).
    fn detach(&mut self, kind: LeaseChild, child: ChildOf<'_>) {
        if let Some(children) = self.children.as_mut() {
            match child {
                ChildOf::Place(place) => children.remove_place(kind, place),
                ChildOf::Stream(name) => children.remove_stream(name),
            }
        }
    }
}

/// What a lease's reads that take no lock read, beside its slab slot
/// (with the record's head: its version and deadline). While the lease is
/// in its slot these words are the only copy of its tenant, its fence and
/// (up to [`Name::INLINE_BYTES`]) its holder: the lease moves them here as
/// it enters the slot and takes them back as it leaves
/// ([`SlotWords`]).
pub(crate) struct LeaseWords {
    tenant: AtomicU64,
    fence: AtomicU64,
    /// The store's tenant-revocation count at which the lease's epoch was
    /// last seen valid under the slot's lock ([`Revocations`]), or
    /// [`Revocations::NEVER`].
    valid_at: AtomicU64,
    /// The holder: its length in the first byte, then its bytes; a first
    /// byte of [`LONG_HOLDER`] says the holder is longer and stays in the
    /// record, for reads under the lock.
    holder: [AtomicU64; 3],
}

/// The first byte of [`LeaseWords::holder`] for a holder kept in the
/// record.
const LONG_HOLDER: u8 = u8::MAX;

impl Default for LeaseWords {
    fn default() -> Self {
        LeaseWords {
            tenant: AtomicU64::new(0),
            fence: AtomicU64::new(0),
            valid_at: AtomicU64::new(Revocations::NEVER),
            holder: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl LeaseWords {
    fn holder_words(&self) -> [u64; 3] {
        self.holder.each_ref().map(|w| w.load(Ordering::Acquire))
    }

    /// The lease's holder: from the words, or from the record if it is
    /// kept there. Under the slot's lock.
    pub(in crate::store) fn holder(&self, lease: &Lease) -> Holder {
        Name::from_words(self.holder_words()).unwrap_or_else(|| lease.holder.clone())
    }

    fn fence(&self) -> u64 {
        self.fence.load(Ordering::Acquire)
    }

    /// Records, under the slot's lock, that the lease's epoch is valid as
    /// of `revocations` (a count read before the check, with no
    /// revocation at work), for reads that take no lock.
    pub(in crate::store) fn mark_valid(&self, lease: &Lease, revocations: u64) {
        if Revocations::settled(revocations)
            && lease.owner.valid()
            && self.valid_at.load(Ordering::Relaxed) != revocations
        {
            self.valid_at.store(revocations, Ordering::Release);
        }
    }
}

impl SlotWords<Lease> for LeaseWords {
    fn fill(&self, head: &Head, lease: &mut Lease) {
        self.tenant.store(lease.owner.id().0, Ordering::Release);
        // The fence is the version the lease enters its slot at (its
        // version's base moves later; ADR 0047).
        self.fence.store(head.stamp().version, Ordering::Release);
        self.valid_at.store(Revocations::NEVER, Ordering::Release);
        let words = match Name::to_words(&lease.holder) {
            Some(words) => {
                lease.holder = Holder::default();
                words
            }
            None => [u64::from(LONG_HOLDER), 0, 0],
        };
        for (word, w) in self.holder.iter().zip(words) {
            word.store(w, Ordering::Release);
        }
    }

    fn empty(&self, lease: &mut Lease) {
        if let Some(holder) = Name::from_words(self.holder_words()) {
            lease.holder = holder;
        }
    }
}

impl Stored for Lease {
    type Key = IdKey;
    type Storage = Slab<Self, Beside<LeaseWords>>;

    fn table(store: &Store) -> &SlabTable<Lease, LeaseWords> {
        &store.shared.leases
    }

    fn retire(
        store: &Store,
        _place: u64,
        removed: Removed<IdKey, Self>,
        why: Why,
        now: MonoTime,
        _detach: bool,
    ) -> usize {
        // A lease has no parent, and its removal is never a cascade.
        store.retire_lease(removed, why.cause(), now)
    }
}

impl Child for Lease {
    const QUOTAS: &'static [Collection] = &[Collection::Leases];
    const HOLDER_QUOTA: Option<Collection> = Some(Collection::Leases);

    /// A lease has no parent: it is visible from its insert on.
    fn attached(&self) -> bool {
        true
    }

    fn set_attached(&mut self) {}

    fn ancestry(&self) -> Ancestry {
        Ancestry {
            owner_valid: self.owner.valid(),
            lease: None,
            listing: None,
        }
    }
}

impl Store {
    /// Grants a lease to `holder` for `ttl`.
    ///
    /// With an idempotency key, a repeat within `idempotency_ttl` returns the
    /// original grant; a repeat with a different holder or TTL is
    /// [`Error::IdempotencyMismatch`].
    pub fn grant(
        &self,
        tenant: TenantId,
        holder: &str,
        ttl: Duration,
        idempotency_key: Option<&str>,
    ) -> Result<LeaseGrant> {
        self.check_name(holder)?;
        let now = self.shared.clock.now();
        let deadline = self.deadline(now, ttl)?;
        let params = || IdemParams::Grant {
            holder: Arc::from(holder),
            ttl_ms: deadline - now.as_millis(),
        };
        self.idempotent(
            tenant,
            idempotency_key,
            params,
            now,
            || self.grant_now(tenant, Holder::new(holder), now, deadline),
            |g| Outcome::Grant(g.clone()),
            |o| match o {
                Outcome::Grant(g) => Some(g.clone()),
                _ => None,
            },
        )
    }

    fn grant_now(
        &self,
        tenant: TenantId,
        holder: Holder,
        now: MonoTime,
        deadline: u64,
    ) -> Result<LeaseGrant> {
        // The fence is the version the lease is inserted at: versions come
        // from one store-wide counter that starts above the fence floor,
        // so it exceeds that of every grant before it, in this incarnation
        // and every earlier one. The id is the lease's slot.
        // The holder moves into the record; the per-holder quota borrows a
        // copy only for a tenant that counts leases per holder.
        let holder = Cell::new(Some(holder));
        let counted = || {
            let h = holder.take();
            let copy = h.clone();
            holder.set(h);
            copy
        };
        let (seq, stamp) = self.shared.leases.with_key(|seq| {
            let lease = |owner, _| Lease {
                owner,
                holder: holder.take().expect("a lease is built once"),
                children: None,
            };
            let stamp = self.create_then(
                tenant,
                seq,
                Parent::None,
                Some(&counted),
                now,
                deadline,
                lease,
                &mut || Ok(()),
            )?;
            Ok((seq, stamp))
        })?;
        Ok(LeaseGrant {
            id: self.lease_id(seq),
            fence: stamp.version,
            version: stamp.version,
            remaining: stamp.remaining(now),
            expires_at: self.shared.clock.wall_at(now) + stamp.remaining(now),
        })
    }

    /// Resets a lease's deadline to `now + ttl`.
    ///
    /// [`Error::Expired`] once its deadline has passed (even unswept),
    /// [`Error::Revoked`] after revocation while its tombstone lives,
    /// [`Error::NotFound`] otherwise, [`Error::Restarted`] for an id from an
    /// earlier incarnation.
    pub fn renew(&self, tenant: TenantId, id: LeaseId, ttl: Duration) -> Result<Renewal> {
        self.renew_lease(tenant, id, ttl, None)
    }

    /// [`renew`](Self::renew), only if the lease is still at `version`.
    pub fn renew_at(
        &self,
        tenant: TenantId,
        id: LeaseId,
        ttl: Duration,
        version: u64,
    ) -> Result<Renewal> {
        self.renew_lease(tenant, id, ttl, Some(version))
    }

    fn renew_lease(
        &self,
        tenant: TenantId,
        id: LeaseId,
        ttl: Duration,
        expected: Option<u64>,
    ) -> Result<Renewal> {
        let seq = self.lease_seq(id)?;
        // A stopped store keeps nothing alive, also before its sweep
        // revoked what remains.
        self.refuse_if_stopped()?;
        let now = self.shared.clock.now();
        let deadline = self.deadline(now, ttl)?;
        let guard = |_: &Head, lease: &Lease| {
            if !lease.owner.is_of(tenant) {
                Err(Error::NotFound)
            } else if lease.owner.valid() {
                Ok(())
            } else {
                Err(Error::Revoked)
            }
        };
        match self
            .shared
            .leases
            .renew_guarded(&seq, now, deadline, expected, guard)
        {
            Ok(stamp) => Ok(Renewal::of(stamp, now)),
            Err(Error::NotFound) => Err(self.gone(tenant, seq, now)),
            Err(e) => Err(e),
        }
    }

    /// A live lease's holder, fence, version and remaining time. Takes no
    /// lock and writes nothing shared in the common case (the lease live,
    /// its holder inline, no tenant revoked since it was last read).
    pub fn get_lease(&self, tenant: TenantId, id: LeaseId) -> Result<LeaseInfo> {
        let seq = self.lease_seq(id)?;
        let now = self.shared.clock.now();
        let seen = self.peek_lease(tenant, seq, now, |head, words, state| {
            (words.holder_words(), words.fence(), head.stamp_of(state))
        });
        if let Some((holder, fence, stamp)) = seen {
            if let Some(holder) = Name::from_words(holder) {
                return Ok(LeaseInfo {
                    id,
                    holder,
                    fence,
                    version: stamp.version,
                    remaining: stamp.remaining(now),
                });
            }
        }
        let revocations = self.shared.revocations.now();
        let seen = self.read_lease_words(tenant, seq, now, |lease, words, stamp| {
            words.mark_valid(lease, revocations);
            lease.owner.valid().then(|| LeaseInfo {
                id,
                holder: words.holder(lease),
                fence: words.fence(),
                version: stamp.version,
                remaining: stamp.remaining(now),
            })
        });
        match seen {
            Ok(Some(info)) => Ok(info),
            Ok(None) => Err(Error::Revoked),
            Err(Error::NotFound) => Err(self.gone(tenant, seq, now)),
            Err(e) => Err(e),
        }
    }

    /// Up to `limit` visible leases of `tenant`, resuming at `cursor` (a
    /// page's `next`), in the store's slot order: a lease visible for the
    /// whole scan is returned exactly once across the pages; nothing
    /// expired or revoked is returned. One call looks at most
    /// [`LEASE_SLOTS_PER_ITEM`] × `limit` slots (every tenant's leases sit
    /// in one slab), so a page may hold fewer than `limit` leases, or
    /// none, with `next` set: go on while it is. `limit` must be in
    /// `1..=page_len_max`; a cursor this engine did not hand out is
    /// [`Error::InvalidArgument`]. Writes nothing; holds one slot's lock
    /// at a time.
    pub fn list_leases(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<LeaseInfo>> {
        self.shared.config.check_page_limit(limit)?;
        let start = match cursor {
            None => 0,
            Some(c) => c
                .as_str()
                .parse::<u32>()
                .map_err(|_| Error::InvalidArgument {
                    reason: "a lease cursor must be the `next` of an earlier page",
                })?,
        };
        let now = self.shared.clock.now();
        let slots = u32::try_from(limit)
            .unwrap_or(u32::MAX)
            .saturating_mul(LEASE_SLOTS_PER_ITEM);
        let mut items = Vec::new();
        let next = self
            .shared
            .leases
            .visit_from(start, slots, |&seq, lease, words, stamp| {
                if lease.owner.is_of(tenant)
                    && lease.owner.valid()
                    && !stamp.remaining(now).is_zero()
                {
                    items.push(LeaseInfo {
                        id: self.lease_id(seq),
                        holder: words.holder(lease),
                        fence: words.fence(),
                        version: stamp.version,
                        remaining: stamp.remaining(now),
                    });
                }
                items.len() < limit
            });
        Ok(Page {
            items,
            next: next.map(|slot| Cursor(Arc::from(slot.to_string()))),
        })
    }

    /// Revokes a lease and everything attached to it (listings, their join
    /// attempts, presence, locks, streams). The moment this returns, none of it is
    /// observable through any path. Idempotent: revoking a revoked lease
    /// (while its tombstone lives) is `Ok`.
    pub fn revoke(&self, tenant: TenantId, id: LeaseId) -> Result<()> {
        let _in = self.enter();
        let seq = self.lease_seq(id)?;
        let now = self.shared.clock.now();
        // The tombstone goes first, so that a renewal that misses the
        // lease finds it. It is written for a lease that is visible now;
        // whether the lease is revoked, and what to answer if not, is
        // decided by the removal, under the lease's lock.
        let early = decide::tombstone_first() && self.lease_status(tenant, seq, now).is_ok();
        if early {
            self.tombstone(tenant, seq, now);
        }
        let removed = self.shared.leases.remove_with(
            &seq,
            |lease, _, live| {
                if !lease.owner.is_of(tenant) {
                    Err(Error::NotFound)
                } else if !lease.owner.valid() {
                    Err(Error::Revoked)
                } else if !live {
                    Err(Error::Expired)
                } else {
                    Ok(())
                }
            },
            now,
        );
        match removed {
            Ok(removed) => {
                if !early {
                    self.tombstone(tenant, seq, now);
                }
                self.retire_lease(removed, Cause::Revoked, now);
                Ok(())
            }
            // Gone: revoked before (idempotent while its tombstone lives),
            // or never this tenant's.
            Err(Error::NotFound) => match self.gone(tenant, seq, now) {
                Error::Revoked => Ok(()),
                e => Err(e),
            },
            Err(e) => {
                // Expired meanwhile (a renewal with an earlier clock reading
                // shortened it): not revoked, so no tombstone either.
                if early && e == Error::Expired {
                    self.untombstone(tenant, seq, now);
                }
                Err(e)
            }
        }
    }

    /// Records that `addr` was observed for the lease's holder now. Keeps at
    /// most `endpoints_per_lease_max` addresses; past that the least
    /// recently seen one is replaced (the one documented replacement policy).
    pub fn observe_endpoint(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        addr: SocketAddr,
    ) -> Result<()> {
        let seq = self.lease_seq(lease)?;
        self.refuse_if_stopped()?;
        let now = self.shared.clock.now();
        let cap = self.shared.config.endpoints_per_lease_max;
        let owned = |l: &Lease| l.owner.is_of(tenant);
        let outcome = self
            .shared
            .leases
            .update_owned(&seq, now, owned, None, |l, _| {
                if !l.owner.valid() {
                    return Err(Error::Revoked);
                }
                let endpoints = l.children_mut().endpoints_mut();
                if let Some(seen) = endpoints.iter_mut().find(|(a, _)| *a == addr) {
                    seen.1 = now;
                } else if endpoints.len() < cap {
                    push_small(endpoints, (addr, now));
                } else if let Some(oldest) = endpoints.iter_mut().min_by_key(|(a, at)| (*at, *a)) {
                    *oldest = (addr, now);
                }
                Ok(((), None))
            });
        match outcome {
            Ok(_) => Ok(()),
            Err(Error::NotFound) => Err(self.gone(tenant, seq, now)),
            Err(e) => Err(e),
        }
    }

    /// The endpoints observed for a live lease, most recently seen first.
    pub fn endpoints(&self, tenant: TenantId, lease: LeaseId) -> Result<Vec<EndpointSeen>> {
        let seq = self.lease_seq(lease)?;
        let now = self.shared.clock.now();
        let seen = self.read_lease(tenant, seq, now, |l, _| {
            l.owner.valid().then(|| {
                l.children
                    .as_ref()
                    .map(|c| c.endpoints())
                    .unwrap_or_default()
                    .iter()
                    .map(|&(addr, last_seen)| EndpointSeen {
                        addr,
                        age: now.saturating_since(last_seen),
                    })
                    .collect::<Vec<_>>()
            })
        });
        match seen {
            Ok(Some(mut list)) => {
                list.sort_by(|a, b| a.age.cmp(&b.age).then(a.addr.cmp(&b.addr)));
                Ok(list)
            }
            Ok(None) => Err(Error::Revoked),
            Err(Error::NotFound) => Err(self.gone(tenant, seq, now)),
            Err(e) => Err(e),
        }
    }
}

impl Store {
    /// Tenant `tenant`'s lease `seq` read without its slot's lock: `read`'s
    /// answer only when the lease is plainly visible (the tenant's, its
    /// epoch seen valid with no tenant revoked since, live at `now`), from
    /// its head, words and state word. Anything else (`None`) is for the
    /// read under the lock to decide. The checks come first, so a read
    /// they refuse loads no more.
    #[inline]
    fn peek_lease<R>(
        &self,
        tenant: TenantId,
        seq: u64,
        now: MonoTime,
        read: impl Fn(&Head, &LeaseWords, State) -> R,
    ) -> Option<R> {
        self.shared
            .leases
            .peek(&seq, |head, words| {
                if words.tenant.load(Ordering::Acquire) != tenant.0
                    || !self
                        .shared
                        .revocations
                        .still(words.valid_at.load(Ordering::Acquire))
                {
                    return None;
                }
                let state = head.state();
                state.is_live(now).then(|| read(head, words, state))
            })
            .flatten()
    }

    /// A visible lease's time left at `now`, read without its slot's lock,
    /// if it is plainly visible ([`peek_lease`](Self::peek_lease)).
    #[inline]
    pub(in crate::store) fn peek_lease_remaining(
        &self,
        tenant: TenantId,
        seq: u64,
        now: MonoTime,
    ) -> Option<Duration> {
        self.peek_lease(tenant, seq, now, |_, _, state| {
            Duration::from_millis(state.deadline_ms() - now.as_millis())
        })
    }

    /// Reads tenant `tenant`'s lease `seq` and its words under the slot's
    /// lock; `NotFound` if it is another tenant's.
    pub(in crate::store) fn read_lease_words<R>(
        &self,
        tenant: TenantId,
        seq: u64,
        now: MonoTime,
        read: impl FnOnce(&Lease, &LeaseWords, Stamp) -> R,
    ) -> Result<R> {
        self.shared
            .leases
            .read_words(&seq, now, |v| v.owner.is_of(tenant), read)
    }
}

impl Store {
    /// Takes a slot of `kind` in tenant `tenant`'s lease `seq`'s list
    /// ([`Parent::reserve`](crate::store::protocol::attach::Parent::reserve)), for a
    /// stream under its name (`stream`), for a record to be confirmed
    /// with its place: refused if the lease is not visible or the list is
    /// at its cap.
    pub(in crate::store) fn take_lease_slot(
        &self,
        tenant: TenantId,
        seq: u64,
        kind: LeaseChild,
        stream: Option<&Name>,
        now: MonoTime,
    ) -> Result<()> {
        let cap = kind.cap(&self.shared.config);
        let owned = |l: &Lease| l.owner.is_of(tenant);
        let taken = self
            .shared
            .leases
            .update_owned(&seq, now, owned, None, |lease, _| {
                if !lease.owner.valid() {
                    return Err(Error::Revoked);
                }
                let children = lease.children_mut();
                let held = children.held(kind);
                if held >= cap {
                    let (cap, held) = (cap as u64, held as u64);
                    return Err(Error::capacity(kind.scope(), cap, held));
                }
                match stream {
                    Some(name) => children.push_stream(name.clone()),
                    None => children.reserve(kind),
                }
                Ok(((), None))
            });
        match taken {
            Ok(_) => Ok(()),
            Err(Error::NotFound) => Err(self.gone(tenant, seq, now)),
            Err(e) => Err(e),
        }
    }

    /// Confirms a slot taken in lease `seq`'s list of `kind`: for a
    /// record, turns a pending slot into its place; for a stream, finds
    /// its name (searched from the end, where its slot was pushed).
    /// Whether the lease is still there, valid, and held the slot; `None`
    /// if the lease is gone.
    pub(in crate::store) fn confirm_lease_slot(
        &self,
        seq: u64,
        kind: LeaseChild,
        child: ChildOf<'_>,
    ) -> Option<bool> {
        self.shared.leases.modify(&seq, |l| {
            if !l.owner.valid() {
                return false;
            }
            match child {
                ChildOf::Place(place) => l.children_mut().confirm(kind, place),
                ChildOf::Stream(name) => l
                    .children
                    .as_deref()
                    .is_some_and(|c| c.streams().iter().rev().any(|s| &**s == name)),
            }
        })
    }

    /// Gives back a slot of `kind` in lease `seq`'s list that a creation
    /// took and did not confirm (a record's), or confirmed as `child`.
    pub(in crate::store) fn give_lease_slot(
        &self,
        seq: u64,
        kind: LeaseChild,
        child: Option<ChildOf<'_>>,
    ) {
        self.shared.leases.modify(&seq, |l| match child {
            Some(child) => l.detach(kind, child),
            None => {
                if let Some(children) = l.children.as_mut() {
                    children.give_back(kind);
                }
            }
        });
    }

    pub(in crate::store) fn retire_lease(
        &self,
        r: Removed<IdKey, Lease>,
        cause: Cause,
        now: MonoTime,
    ) -> usize {
        let seq = r.key;
        let lease = r.value;
        let tenant = lease.owner.id();
        lease.owner.tenant().quota(Collection::Leases).release(1);
        // Counted against its holder iff the tenant counts leases so: it
        // decided that when it registered, before this lease was made.
        if lease.owner.tenant().counts_per_holder(Collection::Leases) {
            lease
                .owner
                .tenant()
                .release_holder(&lease.holder, Collection::Leases);
        }
        let why = Why::from(cause);
        self.announce(
            Collection::Leases,
            tenant,
            || RecordId::Lease(self.lease_id(seq)),
            &why,
            || Some(lease.holder.clone()),
        );
        let root = self.shared.events.subscribed().then(|| Root {
            collection: Collection::Leases,
            id: RecordId::Lease(self.lease_id(seq)),
            cause,
        });
        let children_why = why.for_children(|| root);
        let mut n = 0;
        let children = lease.children.map(|c| *c).unwrap_or_default();
        // Each kind's children, in the cascade's order.
        for (run, kind) in ON_LEASE.iter().enumerate() {
            for at in children.places_of_run(run) {
                n += (kind.cascade)(self, at, seq, &children_why, now);
            }
        }
        for name in children.streams() {
            // One still being created was never visible: its creation
            // finds it gone and answers for it.
            let removed = self.shared.streams.remove_child((tenant, name), seq);
            // (A stream is not a record: it is not counted in `n`.)
            if let Some(stream) = removed.filter(|s| s.visible()) {
                self.retire_stream(
                    tenant,
                    Arc::from(name.clone()),
                    &stream,
                    children_why.clone(),
                    false,
                );
            }
        }
        self.release_owner(&lease.owner);
        n
    }

    /// Takes a removed child out of lease `seq`'s list.
    pub(in crate::store) fn detach_from_lease(
        &self,
        seq: u64,
        kind: LeaseChild,
        child: ChildOf<'_>,
    ) {
        self.shared.leases.modify(&seq, |l| l.detach(kind, child));
    }
}

impl Store {
    /// A visible lease's time left at `now` (what its children live for),
    /// or why it is not visible.
    pub(in crate::store) fn lease_remaining(
        &self,
        tenant: TenantId,
        seq: u64,
        now: MonoTime,
    ) -> Result<Duration> {
        if let Some(left) = self.peek_lease_remaining(tenant, seq, now) {
            return Ok(left);
        }
        let revocations = self.shared.revocations.now();
        let seen = self.read_lease_words(tenant, seq, now, |v, words, stamp| {
            words.mark_valid(v, revocations);
            v.owner.valid().then(|| stamp.remaining(now))
        });
        match seen {
            Ok(Some(left)) => Ok(left),
            Ok(None) => Err(Error::Revoked),
            Err(Error::NotFound) => Err(self.gone(tenant, seq, now)),
            Err(e) => Err(e),
        }
    }

    /// Reads tenant `tenant`'s lease `seq`; `NotFound` if it is another
    /// tenant's.
    pub(in crate::store) fn read_lease<R>(
        &self,
        tenant: TenantId,
        seq: u64,
        now: MonoTime,
        read: impl FnOnce(&Lease, Stamp) -> R,
    ) -> Result<R> {
        self.shared
            .leases
            .read_owned(&seq, now, |v| v.owner.is_of(tenant), read)
    }

    /// What a missing lease is: revoked while its tombstone lives, else
    /// not found.
    pub(in crate::store) fn gone(&self, tenant: TenantId, seq: u64, now: MonoTime) -> Error {
        match self
            .shared
            .tombstones
            .read(&seq, now, |owner, _| *owner == tenant)
        {
            Ok(true) => Error::Revoked,
            _ => Error::NotFound,
        }
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use crate::base::time::{Clock, ManualClock};
    use crate::contract::config::StoreConfig;

    const T: TenantId = TenantId(1);
    const TTL: Duration = Duration::from_secs(60);

    fn store() -> (Store, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new());
        let store = Store::new(StoreConfig::default(), clock.clone()).unwrap();
        (store, clock)
    }

    #[test]
    fn a_long_holder_stays_in_the_record_and_reads_back() {
        // The marker is no name's words, so a read without the lock
        // falls back to the record.
        assert_eq!(Name::from_words([u64::from(LONG_HOLDER), 0, 0]), None);
        let (s, _) = store();
        for holder in [
            "h",
            "é-22-bytes-of-holder-x",
            "a-holder-longer-than-23-bytes",
        ] {
            let lease = s.grant(T, holder, TTL, None).unwrap();
            assert_eq!(s.get_lease(T, lease.id).unwrap().holder, holder);
            assert_eq!(s.get_lease(T, lease.id).unwrap().holder, holder);
        }
    }

    #[test]
    fn a_read_of_a_lease_seen_valid_writes_nothing_to_its_slot() {
        let (s, clock) = store();
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        let seq = s.lease_seq(lease.id).unwrap();
        // The first read takes the lock and records the epoch as valid.
        let first = s.get_lease(T, lease.id).unwrap();
        let word = s.shared.leases.word(seq).unwrap();
        clock.advance(Duration::from_secs(1));
        for _ in 0..100 {
            let info = s.get_lease(T, lease.id).unwrap();
            assert_eq!((&*info.holder, info.fence), ("host-a", first.fence));
            assert_eq!(info.remaining, Duration::from_secs(59));
            assert!(s.lease_status(T, seq, clock.now()).is_ok());
        }
        assert_eq!(
            s.shared.leases.word(seq),
            Some(word),
            "a read took the slot's lock"
        );
        // A renewal holds the lock, and is seen by the next read.
        let renewed = s.renew(T, lease.id, TTL).unwrap();
        assert_ne!(s.shared.leases.word(seq), Some(word));
        let info = s.get_lease(T, lease.id).unwrap();
        assert_eq!((info.version, info.remaining), (renewed.version, TTL));
    }

    #[test]
    fn reads_without_the_lock_answer_what_reads_under_it_answer() {
        let (s, clock) = store();
        let other = TenantId(2);
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        let long = s
            .grant(T, "a-holder-longer-than-23-bytes", TTL, None)
            .unwrap();
        s.get_lease(T, lease.id).unwrap();
        // Another tenant's id reads as missing; a long holder is read
        // under the lock.
        assert_eq!(s.get_lease(other, lease.id), Err(Error::NotFound));
        assert_eq!(
            &*s.get_lease(T, long.id).unwrap().holder,
            "a-holder-longer-than-23-bytes"
        );
        // Another tenant's revocation sends the next read to the lock once,
        // which answers as before.
        s.grant(other, "h", TTL, None).unwrap();
        s.revoke_tenant(other).unwrap();
        assert_eq!(&*s.get_lease(T, lease.id).unwrap().holder, "host-a");
        // Expired: the read without the lock leaves it to the lock.
        clock.advance(TTL);
        assert_eq!(s.get_lease(T, lease.id), Err(Error::Expired));
        // Its own tenant revoked: revoked.
        let (s, _) = store();
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        s.get_lease(T, lease.id).unwrap();
        s.revoke_tenant(T).unwrap();
        assert!(matches!(
            s.get_lease(T, lease.id),
            Err(Error::Revoked | Error::NotFound)
        ));
    }

    /// A lease's children of each kind stay in their own run through
    /// slots taken, confirmed with places, given back and removed in any
    /// order; a slot is confirmed only if one of its kind was taken, and
    /// a stream is kept by its name.
    #[test]
    fn a_leases_children_keep_to_their_kinds() {
        use crate::store::kinds::listing::Listing;
        use crate::store::kinds::lock::Lock;
        use crate::store::kinds::presence::Presence;
        use crate::store::protocol::attach::{LeaseChild, OnLease};
        let (members, listings) = (Presence::CHILD, Listing::CHILD);
        let (locks, streams) = (Lock::CHILD, LeaseChild::STREAMS);
        // A place is a slot key: a generation of at least one above the
        // slot's index.
        let p = |index: u64| (1 << 32) | index;
        let mut c = LeaseChildren::default();
        for kind in [members, listings, members, locks, listings] {
            c.reserve(kind);
        }
        assert_eq!((c.held(members), c.pending_slots()), (2, 5));
        let places = |c: &LeaseChildren, kind| c.places(kind).collect::<Vec<_>>();
        assert!(!c.confirm(streams, p(9)), "a stream has no place");
        for (kind, place) in [
            (members, p(11)),
            (listings, p(21)),
            (members, p(12)),
            (locks, p(31)),
            (listings, p(22)),
        ] {
            assert!(c.confirm(kind, place), "{kind:?} {place}");
        }
        assert!(!c.confirm(members, p(13)), "no member's slot was taken");
        c.push_stream(Name::new("s1"));
        assert_eq!(places(&c, listings), [p(21), p(22)]);
        assert_eq!(places(&c, locks), [p(31)]);
        assert_eq!(places(&c, members), [p(11), p(12)]);
        assert_eq!(places(&c, streams), [] as [u64; 0]);
        assert_eq!(c.pending_slots(), 0);
        c.reserve(members);
        assert_eq!(c.held(members), 3, "a pending slot counts to the cap");
        c.give_back(members);
        c.give_back(members); // none pending: nothing
        assert_eq!((c.held(members), c.pending_slots()), (2, 0));
        c.remove_place(members, p(11));
        c.remove_place(locks, p(12)); // not a lock's place: nothing
        c.remove_place(listings, p(21));
        assert_eq!(places(&c, listings), [p(22)]);
        assert_eq!(places(&c, locks), [p(31)]);
        assert_eq!(places(&c, members), [p(12)]);
        assert_eq!(c.streams().len(), 1);
        c.remove_stream("s1");
        for (kind, place) in [(locks, p(31)), (listings, p(22)), (members, p(12))] {
            c.remove_place(kind, place);
        }
        assert!(c.places.is_empty() && c.rare.is_none());
        assert_eq!(c.ends, [0; ON_LEASE.len()]);
    }

    /// Declared kinds share one run, each place carrying its kind's
    /// number: each kind counts, confirms and gives back only its own, and
    /// the run hands out the places without the number.
    #[test]
    fn declared_kinds_share_a_run_and_keep_to_their_own() {
        use crate::base::collection::Kind;
        use crate::store::kinds::record::Declared;
        use crate::store::protocol::attach::OnLease;
        let p = |index: u64| (1 << 32) | index;
        let [a, b] = [0, 15].map(|k| Declared::CHILD.of_kind(Kind::at(k).unwrap()));
        let mut c = LeaseChildren::default();
        for kind in [a, b, b] {
            c.reserve(kind);
        }
        assert_eq!((c.held(a), c.held(b), c.pending_slots()), (1, 2, 3));
        assert!(c.confirm(b, p(7)) && c.confirm(b, p(8)));
        assert!(!c.confirm(b, p(9)), "no other slot of b is pending");
        assert!(c.confirm(a, p(7)), "the same place under another kind");
        let run = ON_LEASE.len() - 1;
        assert_eq!(c.places_of_run(run).collect::<Vec<_>>(), [p(7), p(7), p(8)]);
        assert_eq!(c.places(b).collect::<Vec<_>>(), [p(7), p(8)]);
        c.remove_place(a, p(8)); // b's, not a's: nothing
        assert_eq!((c.held(a), c.held(b)), (1, 2));
        c.remove_place(b, p(7));
        assert_eq!(c.places(a).collect::<Vec<_>>(), [p(7)]);
        assert_eq!(c.places(b).collect::<Vec<_>>(), [p(8)]);
        c.reserve(a);
        c.give_back(b); // none of b's pending: nothing
        assert_eq!((c.held(a), c.pending_slots()), (2, 1));
        c.give_back(a);
        assert_eq!((c.held(a), c.pending_slots()), (1, 0));
    }

    #[test]
    fn a_lease_leaving_its_slot_takes_its_holder_back() {
        let (s, _) = store();
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        let events = s.subscribe().unwrap();
        s.revoke(T, lease.id).unwrap();
        let Some(crate::contract::events::Received::Event(event)) = events.try_recv() else {
            panic!("the revocation's event")
        };
        assert_eq!(event.holder.as_deref(), Some("host-a"));
        // Taken back whole: a lease granted into the same slot has its own.
        let again = s.grant(T, "host-b", TTL, None).unwrap();
        assert_eq!(&*s.get_lease(T, again.id).unwrap().holder, "host-b");
    }
}
