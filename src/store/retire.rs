//! Removal bookkeeping: what happens after a record left its table.
//!
//! Each `retire_*` runs exactly once per record that left its table, by
//! whichever path removed it (sweep, revocation, cascade, release, drain).
//! If the record was attached it owns its tenant units and its tenant
//! hold: they are given back here, its key leaves the tenant's index, and
//! its event is emitted. A record that was never attached owns nothing (its
//! creation's guard gives its units back) and emits nothing. When asked
//! (`detach`: the parent is not itself being removed), the record also
//! leaves its parent's index; then its own children are removed (cause
//! `Cascaded`). Each returns the number of descendants it removed.
//! `retire_stream` is the same for a stream that left the stream hub (not
//! a record: it owns no tenant units, and counts as no descendant).

use super::attach::LeaseChild;
use super::idempotency::Idem;
use super::join::Attempt;
use super::lease::Lease;
use super::listing::Listing;
use super::lock::Lock;
use super::name_key::NameLookup;
use super::presence::Presence;
use super::{owned_by, Collection, IdKey, NameKey, Store};
use crate::base::ids::TenantId;
use crate::base::sync::{lock_at, Arc, Rung};
use crate::base::time::MonoTime;
use crate::contract::events::{Cause, RecordId, Root};
use crate::coord::stream::Stream;
use crate::mem::record::Record;
use crate::mem::shard::ShardMap;
use crate::mem::table::{Removed, Storage, Table, TableOf};
use std::hash::Hash;

/// Why a record is retired, as its removal event tells it: its cause and,
/// for a cascade, the removal that started it (made only when someone
/// subscribes: building it may copy a name).
#[derive(Clone)]
pub(super) struct Why {
    cause: Cause,
    root: Option<Root>,
}

impl From<Cause> for Why {
    fn from(cause: Cause) -> Self {
        Why { cause, root: None }
    }
}

impl Why {
    pub(super) fn cause(&self) -> Cause {
        self.cause
    }

    pub(super) fn root(&self) -> Option<&Root> {
        self.root.as_ref()
    }

    /// A cascade from `root`.
    fn cascade(root: Option<Root>) -> Self {
        Why {
            cause: Cause::Cascaded,
            root,
        }
    }

    /// What the children of a record retired for `self` are retired for:
    /// the same root if this is a cascade, else this record's removal.
    fn for_children(&self, root: impl FnOnce() -> Option<Root>) -> Self {
        if self.cause == Cause::Cascaded {
            Why::cascade(self.root.clone())
        } else {
            Why::cascade(root())
        }
    }
}

/// A kind of record the store keeps in a table of its own: where it lives
/// and what removing it involves. The sweep and the digest loop over the
/// kinds through this trait; creation adds [`Child`](super::attach::Child).
pub(super) trait Stored: Sized {
    /// The table's key.
    type Key: Eq + Hash + Ord + Clone;
    /// Where the table keeps its records.
    type Storage: Storage<Self::Key, Self>;
    /// The record's table.
    fn table(store: &Store) -> &TableOf<Self::Key, Self, Self::Storage>;
    /// The removal bookkeeping of a record that left its table (detached
    /// from its parent): returns the descendants it removed.
    fn retire(
        store: &Store,
        removed: Removed<Self::Key, Self>,
        cause: Cause,
        now: MonoTime,
    ) -> usize;
}

impl Stored for Idem {
    type Key = NameKey;
    type Storage = ShardMap<NameKey, Record<Self>>;

    fn table(store: &Store) -> &Table<NameKey, Idem> {
        &store.shared.idempotency
    }

    fn retire(
        store: &Store,
        removed: Removed<NameKey, Self>,
        cause: Cause,
        _now: MonoTime,
    ) -> usize {
        store.retire_idem(removed, cause);
        0
    }
}

impl Store {
    /// Sweeps one kind's table at `now` and retires what left: the records
    /// removed, descendants included.
    pub(super) fn sweep_kind<S: Stored>(&self, now: MonoTime) -> usize {
        let mut out = Vec::new();
        S::table(self).sweep(now, &mut out);
        out.into_iter()
            .map(|r| {
                let late = now.saturating_since(r.stamp.deadline);
                crate::contract::metrics::expiry_lag(
                    crate::contract::metrics::EngineLabel::Memory,
                    late,
                );
                1 + S::retire(self, r, Cause::Expired, now)
            })
            .sum()
    }

    /// An order-independent digest of one kind's table, tagged `tag`.
    #[cfg(any(test, feature = "internals"))]
    pub(super) fn digest_kind<S: Stored>(&self, tag: u8) -> u64 {
        digest_table(S::table(self), tag)
    }
}

/// The sum of per-record hashes of (tag, key, version, deadline).
#[cfg(any(test, feature = "internals"))]
pub(super) fn digest_table<K: Eq + Hash + Ord + Clone, V, S: Storage<K, V>>(
    table: &TableOf<K, V, S>,
    tag: u8,
) -> u64 {
    let mut d = 0u64;
    table.for_each(|k, _, s| {
        use std::hash::Hasher;
        let mut h = std::hash::DefaultHasher::new();
        (tag, k, s.version, s.deadline).hash(&mut h);
        d = d.wrapping_add(h.finish());
    });
    d
}

impl Store {
    pub(super) fn retire_lease(
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
        for key in children.listings {
            let removed = self.shared.listings.remove_with(
                &(tenant, key),
                |v, _, _| owned_by(v.lease == seq),
                now,
            );
            if let Ok(child) = removed {
                n += 1 + self.retire_listing(child, children_why.clone(), now, false);
            }
        }
        for member in children.members {
            let removed = self.shared.presence.remove_with(
                &(tenant, member),
                |v, _, _| owned_by(v.lease == Some(seq)),
                now,
            );
            if let Ok(child) = removed {
                n += 1;
                self.retire_presence(child, children_why.clone(), false);
            }
        }
        for name in children.locks {
            let removed = self.shared.locks.remove_with(
                &(tenant, name),
                |v, _, _| owned_by(v.lease == Some(seq)),
                now,
            );
            if let Ok(child) = removed {
                n += 1;
                self.retire_lock(child, children_why.clone(), false);
            }
        }
        for name in children.streams {
            // One still being created was never visible: its creation
            // finds it gone and answers for it.
            let removed = self.shared.streams.remove_child((tenant, &name), seq);
            // (A stream is not a record: it is not counted in `n`.)
            if let Some(stream) = removed.filter(|s| s.visible()) {
                self.retire_stream(
                    tenant,
                    Arc::from(name),
                    &stream,
                    children_why.clone(),
                    false,
                );
            }
        }
        self.release_owner(&lease.owner);
        n
    }

    pub(super) fn retire_listing(
        &self,
        r: Removed<NameKey, Listing>,
        why: impl Into<Why>,
        now: MonoTime,
        detach: bool,
    ) -> usize {
        let why = why.into();
        self.inside_gate();
        let (tenant, key) = r.key;
        let listing = r.value;
        if listing.attached {
            listing
                .owner
                .tenant()
                .quota(Collection::Listings)
                .release(1);
            if let Some(holder) = &listing.holder {
                listing
                    .owner
                    .tenant()
                    .release_holder(holder, Collection::Listings);
            }
            lock_at(Rung::TenantIndex, &listing.owner.tenant().index)
                .listings
                .remove(&key);
            let id = || RecordId::Listing(Arc::from(key.clone()));
            self.announce(Collection::Listings, tenant, id, &why, || None);
        }
        if detach {
            self.detach_from_lease(listing.lease, LeaseChild::Listings, &key);
        }
        let children_why = why.for_children(|| {
            self.shared.events.subscribed().then(|| Root {
                collection: Collection::Listings,
                id: RecordId::Listing(Arc::from(key.clone())),
                cause: why.cause,
            })
        });
        let mut n = 0;
        for seq in &listing.attempts {
            let origin = listing.origin;
            let removed = self.shared.attempts.remove_with(
                seq,
                |v, _, _| owned_by(v.origin == origin && !v.phase.is_consumed()),
                now,
            );
            if let Ok(child) = removed {
                n += 1;
                self.retire_attempt(child, children_why.clone(), false);
            }
        }
        // The hold goes last: the tenant must outlive its record's children.
        if listing.attached {
            self.release_owner(&listing.owner);
        }
        n
    }

    pub(super) fn retire_presence(
        &self,
        r: Removed<NameKey, Presence>,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        let (tenant, member) = r.key;
        let presence = r.value;
        if let (true, Some(lease)) = (detach, presence.lease) {
            self.detach_from_lease(lease, LeaseChild::Members, &member);
        }
        if presence.attached {
            presence
                .owner
                .tenant()
                .quota(Collection::Presence)
                .release(1);
            lock_at(Rung::TenantIndex, &presence.owner.tenant().index)
                .members
                .remove(&member);
            self.announce(
                Collection::Presence,
                tenant,
                || RecordId::Member(Arc::from(member)),
                &why,
                || None,
            );
            self.release_owner(&presence.owner);
        }
    }

    pub(super) fn retire_attempt(
        &self,
        r: Removed<IdKey, Attempt>,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        let seq = r.key;
        let attempt = r.value;
        let tenant = attempt.owner.id();
        let consumed = attempt.phase.is_consumed();
        if detach && !consumed {
            self.detach_attempt(tenant, &attempt.listing, attempt.origin, seq);
        }
        if attempt.attached {
            let owner = attempt.owner.tenant();
            owner.quota(Collection::Replay).release(1);
            if !consumed {
                owner.quota(Collection::Attempts).release(1);
                self.shared.pending.release(1);
            }
            let collection = if consumed {
                Collection::Replay
            } else {
                Collection::Attempts
            };
            self.announce(
                collection,
                tenant,
                || RecordId::Attempt(self.attempt_id(seq)),
                &why,
                || None,
            );
            self.release_owner(&attempt.owner);
        }
    }

    /// Takes attempt `seq` out of the pending attempts of the listing
    /// published as `origin`.
    pub(super) fn detach_attempt(&self, tenant: TenantId, listing: &str, origin: u64, seq: u64) {
        let key: &dyn NameLookup = &(tenant, listing);
        self.shared.listings.modify(key, |l| {
            if l.origin == origin {
                l.attempts.retain(|s| *s != seq);
            }
        });
    }

    pub(super) fn retire_lock(&self, r: Removed<NameKey, Lock>, why: impl Into<Why>, detach: bool) {
        let why = why.into();
        let (tenant, name) = r.key;
        let held = r.value;
        if let (true, Some(seq)) = (detach, held.lease) {
            self.detach_from_lease(seq, LeaseChild::Locks, &name);
        }
        if held.attached {
            held.owner.tenant().quota(Collection::Locks).release(1);
            self.announce(
                Collection::Locks,
                tenant,
                || RecordId::Key(Arc::from(name)),
                &why,
                || Some(held.holder.clone()),
            );
            self.release_owner(&held.owner);
        }
    }

    pub(super) fn retire_idem(&self, r: Removed<NameKey, Idem>, cause: Cause) {
        r.value
            .owner
            .tenant()
            .quota(Collection::Idempotency)
            .release(1);
        self.emit_with(
            Collection::Idempotency,
            r.key.0,
            || RecordId::Key(Arc::from(r.key.1)),
            cause,
        );
        self.release_owner(&r.value.owner);
    }

    /// Takes one entry of `child` out of lease `seq`'s index of `kind`.
    /// After a stream left the stream hub: its event, its lease's index
    /// (when `detach`: the lease is not itself being removed), and a wake
    /// for its followers, who then find it gone. Streams are not records:
    /// they own no tenant units or holds.
    pub(super) fn retire_stream(
        &self,
        tenant: TenantId,
        name: Arc<str>,
        stream: &Stream,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        self.inside_gate();
        if let Some(seq) = stream.lease.filter(|_| detach) {
            self.detach_from_lease(seq, LeaseChild::Streams, &name);
        }
        self.announce(
            Collection::Streams,
            tenant,
            || RecordId::Stream(name),
            &why,
            || None,
        );
        // No follower listening is not a failure here.
        let _ = self
            .shared
            .wakes
            .notify(&(tenant, Arc::clone(&stream.wake)));
    }

    pub(super) fn detach_from_lease(&self, seq: u64, kind: LeaseChild, child: &str) {
        self.shared.leases.modify(&seq, |l| l.detach(kind, child));
    }
}
