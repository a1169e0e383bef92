//! Listings: published, discoverable entries attached to a lease.

use crate::base::attrs::Attrs;
use crate::base::error::{ConflictReason, Error, Result, Scope};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Holder;
use crate::base::name::Name;
use crate::base::sync::{lock_at, Arc, Rung};
use crate::base::sync::{AtomicU64, Ordering};
use crate::base::time::MonoTime;
use crate::base::time::DEADLINE_MAX_MS;
use crate::contract::config::StoreConfig;
use crate::contract::events::Cause;
use crate::contract::events::{RecordId, Root};
use crate::contract::relay::Cursor;
use crate::contract::relay::ListingInfo;
use crate::contract::relay::Page;
use crate::mem::named_slab::{NamedSlab, NamedTable, Peeked};
use crate::mem::record::Head;
use crate::mem::table::Removed;
use crate::mem::table::SlotWords;
use crate::store::kinds::idempotency::{IdemParams, Outcome};
use crate::store::owned_by;
use crate::store::protocol::attach::ChildOf;
use crate::store::protocol::attach::{Child, OnLease, Parent};
use crate::store::protocol::retire::Stored;
use crate::store::protocol::retire::Why;
use crate::store::protocol::slot_parts::{AttrsWords, KeptAttrs, ParentWord, ValidAt};
use crate::store::protocol::visible::Ancestry;
use crate::store::tenant::{Owner, TenantIndex};
use crate::store::{Collection, NameKey, NameLookup, Store};
use std::cell::Cell;
use std::ops::Bound;
use std::time::Duration;

pub(crate) struct Listing {
    pub(in crate::store) owner: Owner,
    /// The lease this listing lives under, and whether the listing is
    /// attached (registered with it: visible only then).
    parent: ParentWord,
    /// The version the listing was inserted at: unique per publication,
    /// so a re-published key is a different listing.
    pub(in crate::store) origin: u64,
    attrs: KeptAttrs,
    /// Pending or bound join attempts (at most `attempts_per_listing_max`).
    pub(in crate::store) attempts: Attempts,
    /// The lease's holder, when its tenant counts listings per holder:
    /// the count this listing's removal gives back. Boxed, so a store that
    /// counts nothing per holder pays one word per listing for it.
    pub(in crate::store) holder: Option<Box<Holder>>,
}

impl Listing {
    /// The lease this listing lives under.
    pub(in crate::store) fn lease(&self) -> u64 {
        self.parent.lease()
    }
}

/// A listing's pending or bound join attempts, by slot key: the first
/// in the record (no slot key is zero), more boxed. A listing with at
/// most one join in flight (most, most of the time) allocates nothing
/// for it, and the box goes when its last entry leaves.
#[derive(Default)]
#[expect(
    clippy::box_collection,
    reason = "one word in the listing's slot where a list takes three"
)]
pub(in crate::store) struct Attempts {
    /// An attempt, or [`Attempts::NONE`].
    first: u64,
    more: Option<Box<Vec<u64>>>,
}

impl Attempts {
    const NONE: u64 = 0;

    pub(in crate::store) fn len(&self) -> usize {
        usize::from(self.first != Self::NONE) + self.more.as_ref().map_or(0, |m| m.len())
    }

    pub(in crate::store) fn push(&mut self, seq: u64) {
        debug_assert_ne!(seq, Self::NONE, "no slot key is zero");
        if self.first == Self::NONE {
            self.first = seq;
        } else {
            self.more.get_or_insert_with(Default::default).push(seq);
        }
    }

    /// The entries, oldest first.
    pub(in crate::store) fn iter(&self) -> impl DoubleEndedIterator<Item = &u64> {
        std::iter::once(&self.first)
            .filter(|&&s| s != Self::NONE)
            .chain(self.more.iter().flat_map(|m| m.iter()))
    }

    /// Takes one entry of `seq` out, searching from the end (where it was
    /// pushed).
    pub(in crate::store) fn remove_last(&mut self, seq: u64) {
        let in_more = self
            .more
            .as_mut()
            .and_then(|m| m.iter().rposition(|s| *s == seq).map(|i| m.remove(i)));
        if in_more.is_none() && self.first == seq {
            self.first = Self::NONE;
        }
        self.tidy();
    }

    /// Takes every entry of `seq` out.
    pub(in crate::store) fn remove_all(&mut self, seq: u64) {
        if let Some(m) = &mut self.more {
            m.retain(|s| *s != seq);
        }
        if self.first == seq {
            self.first = Self::NONE;
        }
        self.tidy();
    }

    /// Keeps the first entry in the record and no empty box.
    fn tidy(&mut self) {
        if self.first == Self::NONE {
            if let Some(m) = &mut self.more {
                if !m.is_empty() {
                    self.first = m.remove(0);
                }
            }
        }
        if self.more.as_ref().is_some_and(|m| m.is_empty()) {
            self.more = None;
        }
    }
}

/// A listing's words beside its slot: what a read that takes no lock
/// reads of it (ADR 0078). Its attributes are kept here, and only here,
/// while they fit.
#[derive(Default)]
pub(crate) struct ListingWords {
    origin: AtomicU64,
    lease: AtomicU64,
    /// Seen attached, with its owner's epoch valid.
    valid_at: ValidAt,
    attrs: AttrsWords,
}

impl SlotWords<Listing> for ListingWords {
    fn fill(&self, _: &Head, listing: &mut Listing) {
        self.origin.store(listing.origin, Ordering::Release);
        self.lease.store(listing.parent.lease(), Ordering::Release);
        self.valid_at.reset();
        self.attrs.fill(&mut listing.attrs);
    }

    fn empty(&self, _: &mut Listing) {}
}

/// What a read sees of a visible listing.
struct ListingSeen<'a> {
    origin: u64,
    lease: u64,
    version: u64,
    attrs: &'a Attrs,
}

impl Stored for Listing {
    type Key = NameKey;
    type Storage = NamedSlab<NameKey, Self, ListingWords>;

    fn table(store: &Store) -> &NamedTable<NameKey, Listing, ListingWords> {
        &store.shared.listings
    }

    fn retire(
        store: &Store,
        place: u64,
        removed: Removed<NameKey, Self>,
        why: Why,
        now: MonoTime,
        detach: bool,
    ) -> usize {
        store.retire_listing(place, removed, why, now, detach)
    }
}

impl OnLease for Listing {
    const COLLECTION: Collection = Collection::Listings;

    fn cap(config: &StoreConfig) -> usize {
        config.listings_per_lease_max
    }

    fn lease_of(&self) -> Option<u64> {
        Some(self.lease())
    }

    fn key_at(store: &Store, place: u64) -> Option<NameKey> {
        store.shared.listings.key_at(place)
    }

    #[cfg(any(test, feature = "internals"))]
    fn named(key: &NameKey) -> (TenantId, Name) {
        key.clone()
    }
}

impl Child for Listing {
    const QUOTAS: &'static [Collection] = &[Collection::Listings];
    const HOLDER_QUOTA: Option<Collection> = Some(Collection::Listings);

    fn count_holder(&mut self, holder: Holder) {
        self.holder = Some(Box::new(holder));
    }

    fn attached(&self) -> bool {
        self.parent.attached()
    }

    fn set_attached(&mut self) {
        self.parent.attach();
    }

    fn ancestry(&self) -> Ancestry {
        Ancestry {
            owner_valid: self.owner.valid(),
            lease: Some(self.lease()),
            listing: None,
        }
    }

    const INDEX: Option<fn(u64, &mut TenantIndex)> = Some(|place, index| {
        index.listings.insert(place);
    });

    /// The origin is the version the listing was inserted at.
    fn made_at(&self, version: u64) -> bool {
        self.origin == version
    }
}

impl From<&str> for Cursor {
    fn from(text: &str) -> Self {
        Cursor(Arc::from(text))
    }
}

/// What the store needs to know about a visible listing.
pub(in crate::store) struct ListingView {
    pub(in crate::store) origin: u64,
    info: ListingInfo,
}

impl Store {
    /// Publishes a listing under `key`, attached to `lease`, with `attrs`
    /// (at most `attrs_bytes_max` bytes). A visible listing under `key` is
    /// [`Error::Conflict`]. The listing is visible only while its lease is.
    pub fn publish(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        key: &str,
        attrs: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<ListingInfo> {
        let lease_seq = self.lease_seq(lease)?;
        let named = self.key_name(key)?;
        let stored = self.attrs(attrs)?;
        let _in = self.enter();
        let now = self.shared.clock.now();
        let params = || IdemParams::Publish {
            lease: lease_seq,
            key: Arc::from(key),
            attrs: Arc::from(attrs),
        };
        self.idempotent(
            tenant,
            idempotency_key,
            params,
            now,
            || self.publish_now(tenant, lease_seq, named, stored, now, &mut || Ok(())),
            |l| Outcome::Publish(l.clone()),
            // A repeat reports the lease's time left now.
            |o| match o {
                Outcome::Publish(l) => Some(ListingInfo {
                    remaining: self
                        .lease_remaining(tenant, lease_seq, now)
                        .unwrap_or_default(),
                    ..l.clone()
                }),
                _ => None,
            },
        )
    }

    /// Publishes at `now`, running `then` just before the listing becomes
    /// visible (a transaction's commit: see `create_then`).
    pub(in crate::store) fn publish_now(
        &self,
        tenant: TenantId,
        lease: u64,
        key: Name,
        attrs: Attrs,
        now: MonoTime,
        then: &mut dyn FnMut() -> Result<()>,
    ) -> Result<ListingInfo> {
        self.inside_gate();
        let parent = Parent::Lease {
            seq: lease,
            kind: Listing::CHILD,
        };
        let nkey: NameKey = (tenant, key.clone());
        let make = |owner, version| Listing {
            owner,
            parent: ParentWord::new(lease),
            origin: version,
            attrs: KeptAttrs::new(attrs.clone()),
            attempts: Attempts::default(),
            holder: None,
        };
        // The publisher: the lease's holder (read only for a tenant that
        // counts listings per holder).
        let holder = || {
            self.read_lease_words(tenant, lease, now, |l, words, _| words.holder(l))
                .ok()
        };
        let stamp = self.create_then(
            tenant,
            nkey,
            parent,
            Some(&holder),
            now,
            DEADLINE_MAX_MS,
            make,
            then,
        )?;
        Ok(ListingInfo {
            key,
            lease: self.lease_id(lease),
            attrs,
            version: stamp.version,
            remaining: self.lease_remaining(tenant, lease, now).unwrap_or_default(),
        })
    }

    /// The visible listing under `key`, with what its children need.
    pub(in crate::store) fn listing_view(
        &self,
        key: &NameKey,
        now: MonoTime,
    ) -> Result<ListingView> {
        let (mut view, left) = self.visible_listing(key, now, true, |seen| ListingView {
            origin: seen.origin,
            info: ListingInfo {
                key: key.1.clone(),
                lease: self.lease_id(seen.lease),
                attrs: seen.attrs.clone(),
                version: seen.version,
                remaining: Duration::ZERO,
            },
        })?;
        view.info.remaining = left;
        Ok(view)
    }

    /// The publication (`origin`) of the visible listing under `key`: all
    /// a child needs to attach to it, or to check it still hangs from the
    /// same publication. Reads none of the listing's attributes, which
    /// every joiner of a busy listing would otherwise share.
    pub(in crate::store) fn listing_origin(
        &self,
        key: &dyn NameLookup,
        now: MonoTime,
    ) -> Result<u64> {
        self.visible_listing(key, now, false, |seen| seen.origin)
            .map(|(origin, _)| origin)
    }

    /// The one visibility rule of a listing: attached, its owner's epoch
    /// current, live, and its lease visible. `see` gets what was read of
    /// it (its attributes only if `with_attrs`; else empty); anything not
    /// visible is `NotFound`. With what `see` made comes the lease's time
    /// left: the listing's own.
    ///
    /// The plain case is read without the slot's lock
    /// ([`NamedTable::peek`]): a listing seen valid under its lock since
    /// the last tenant revocation, live, with attributes in its words.
    /// Anything else is read under the lock, which marks the listing
    /// valid for the next read.
    #[inline(always)]
    fn visible_listing<R>(
        &self,
        key: &dyn NameLookup,
        now: MonoTime,
        with_attrs: bool,
        see: impl FnOnce(ListingSeen<'_>) -> R,
    ) -> Result<(R, Duration)> {
        let peeked = self.shared.listings.peek(key, |head, words| {
            if !words.valid_at.still(&self.shared.revocations) {
                return None;
            }
            let state = head.state();
            if !state.is_live(now) {
                return None;
            }
            // Attributes kept in the record are read under the lock.
            let attrs = if with_attrs {
                words.attrs.peek()?
            } else {
                [0; 3]
            };
            Some((
                words.origin.load(Ordering::Acquire),
                words.lease.load(Ordering::Acquire),
                head.stamp_of(state).version,
                attrs,
            ))
        });
        let (lease, seen) = match peeked {
            Peeked::Seen((origin, lease, version, attrs)) => {
                // Words no write overlapped: attributes they hold.
                let attrs = Attrs::from_words(attrs).unwrap_or_default();
                let seen = see(ListingSeen {
                    origin,
                    lease,
                    version,
                    attrs: &attrs,
                });
                (lease, seen)
            }
            Peeked::Missing => return Err(Error::NotFound),
            Peeked::Locked => self.visible_listing_locked(key, now, with_attrs, see)?,
        };
        if crate::base::faults::active(crate::base::faults::StoreFault::ChildParentUnread) {
            return Ok((seen, Duration::ZERO));
        }
        let left = self
            .lease_remaining(key.tenant(), lease, now)
            .map_err(|_| Error::NotFound)?;
        Ok((seen, left))
    }

    /// [`visible_listing`](Self::visible_listing) under the slot's lock:
    /// the listing's lease and what `see` made of it.
    #[cold]
    #[inline(never)]
    fn visible_listing_locked<R>(
        &self,
        key: &dyn NameLookup,
        now: MonoTime,
        with_attrs: bool,
        see: impl FnOnce(ListingSeen<'_>) -> R,
    ) -> Result<(u64, R)> {
        let revocations = self.shared.revocations.now();
        let seen = self.shared.listings.read_words(
            key,
            now,
            |_| true,
            |v, words, stamp| {
                let visible = v.attached() && v.owner.valid();
                words.valid_at.mark(visible, revocations);
                visible.then(|| {
                    let seen = |attrs: &Attrs| {
                        see(ListingSeen {
                            origin: v.origin,
                            lease: v.lease(),
                            version: stamp.version,
                            attrs,
                        })
                    };
                    let seen = if with_attrs {
                        words.attrs.with(&v.attrs, seen)
                    } else {
                        seen(&Attrs::EMPTY)
                    };
                    (v.lease(), seen)
                })
            },
        );
        match seen {
            Ok(Some(seen)) => Ok(seen),
            Ok(None) | Err(Error::Expired) | Err(Error::NotFound) => Err(Error::NotFound),
            Err(e) => Err(e),
        }
    }

    /// A visible listing.
    pub fn get_listing(&self, tenant: TenantId, key: &str) -> Result<ListingInfo> {
        let key = (tenant, self.key_name(key)?);
        // The consistent read writes what it saw here, and the answer is
        // made once, after it: handed back through the read, the words
        // were stored and loaded again in other widths.
        let (mut lease, mut version, mut attrs) = (0, 0, Attrs::EMPTY);
        let mut left = Ok(Duration::ZERO);
        self.consistent(|| {
            left = self
                .visible_listing(&key, self.shared.clock.now(), true, |seen| {
                    (lease, version) = (seen.lease, seen.version);
                    attrs = seen.attrs.clone();
                })
                .map(|((), left)| left);
        });
        let left = left?;
        Ok(ListingInfo {
            key: key.1,
            lease: self.lease_id(lease),
            attrs,
            version,
            remaining: left,
        })
    }

    /// Reads a visible listing in place: `read` gets its lease and its
    /// attributes, under the shard's shared lock, and nothing is copied or
    /// allocated, the key included. The same visibility as
    /// [`get_listing`](Self::get_listing), whose owned answer costs an
    /// allocation per call: this is the read for a relay's packet path.
    /// `read` runs under a lock, so keep it short; it may run more than
    /// once (when a transaction's commit overlaps the read), and the last
    /// run's result is returned.
    pub fn read_listing<R>(
        &self,
        tenant: TenantId,
        key: &str,
        mut read: impl FnMut(LeaseId, &[u8]) -> R,
    ) -> Result<R> {
        self.check_name(key)?;
        let name: &dyn NameLookup = &(tenant, key);
        let now = self.shared.clock.now();
        self.consistent(|| {
            self.visible_listing(name, now, true, |seen| {
                read(self.lease_id(seen.lease), seen.attrs)
            })
            .map(|(seen, _)| seen)
        })
    }

    /// Whether the listing under `nkey` could be updated or removed at
    /// `expected` now: visible, and at that version if one is given. The
    /// check a transaction's commit makes before it changes anything.
    pub(in crate::store) fn check_listing_at(
        &self,
        nkey: &NameKey,
        expected: Option<u64>,
        now: MonoTime,
    ) -> Result<()> {
        let view = self.listing_view(nkey, now)?;
        match expected {
            Some(e) if e != view.info.version => {
                Err(Error::conflict(ConflictReason::Version, view.info.version))
            }
            _ => Ok(()),
        }
    }

    /// Replaces a listing's attributes, only if it is still at
    /// `expected_version`. Returns the new version.
    pub fn update_listing(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: u64,
        attrs: &[u8],
    ) -> Result<u64> {
        let nkey = (tenant, self.key_name(key)?);
        let attrs = self.attrs(attrs)?;
        self.refuse_if_stopped()?;
        let _in = self.enter();
        self.update_listing_at(&nkey, expected_version, attrs, self.shared.clock.now())
    }

    /// [`update_listing`](Self::update_listing) at `now`.
    pub(in crate::store) fn update_listing_at(
        &self,
        nkey: &NameKey,
        expected_version: u64,
        attrs: Attrs,
        now: MonoTime,
    ) -> Result<u64> {
        self.inside_gate();
        let view = self.listing_view(nkey, now)?;
        let (_, stamp) = self.shared.listings.update_words(
            nkey,
            now,
            |_| true,
            Some(expected_version),
            |v, words, stamp| {
                if v.origin != view.origin {
                    return Err(Error::NotFound);
                }
                words.attrs.store(&mut v.attrs, attrs);
                Ok(((), Some(crate::store::stamp_deadline(&stamp))))
            },
        )?;
        Ok(stamp.version)
    }

    /// Removes a listing (and its pending join attempts), optionally only at
    /// `expected_version`.
    pub fn unpublish(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: Option<u64>,
    ) -> Result<()> {
        self.end_listing(tenant, key, expected_version, Cause::Released)
    }

    /// Revokes a listing and its pending join attempts. Idempotent: a
    /// listing that is not (or no longer) visible is `Ok`.
    pub fn revoke_listing(&self, tenant: TenantId, key: &str) -> Result<()> {
        match self.end_listing(tenant, key, None, Cause::Revoked) {
            Err(Error::NotFound) => Ok(()),
            other => other,
        }
    }

    fn end_listing(
        &self,
        tenant: TenantId,
        key: &str,
        expected: Option<u64>,
        cause: Cause,
    ) -> Result<()> {
        let nkey = (tenant, self.key_name(key)?);
        let _in = self.enter();
        self.end_listing_at(&nkey, expected, cause, self.shared.clock.now())
    }

    /// Ends the listing under `nkey` at `now`.
    pub(in crate::store) fn end_listing_at(
        &self,
        nkey: &NameKey,
        expected: Option<u64>,
        cause: Cause,
        now: MonoTime,
    ) -> Result<()> {
        self.inside_gate();
        let view = self.listing_view(nkey, now)?;
        let (place, removed) = self.shared.listings.remove_placed(
            nkey,
            |v, stamp, _| {
                crate::store::owned_by(v.origin == view.origin)?;
                match expected {
                    Some(e) if e != stamp.version => {
                        Err(Error::conflict(ConflictReason::Version, stamp.version))
                    }
                    _ => Ok(()),
                }
            },
            now,
            |&place| place,
        )?;
        self.retire_listing(place, removed, cause, now, true);
        Ok(())
    }

    /// Up to `limit` visible listings of `tenant` after `cursor`, in the
    /// order of their places in the store (not their keys' order: a
    /// listing keeps its place while it lives, so the order is stable). A
    /// listing visible for the whole scan is returned exactly once across
    /// the pages; nothing expired or revoked is returned. A page may hold
    /// fewer than `limit` items when some turned invisible; `next` says
    /// whether to go on. `limit` must be in `1..=page_len_max`; a cursor
    /// that is not an earlier page's `next` is
    /// [`Error::InvalidArgument`].
    pub fn list_listings(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<ListingInfo>> {
        self.consistent(|| {
            self.page(
                tenant,
                cursor,
                limit,
                |index| &index.listings,
                |store, place, now| {
                    let key = store.shared.listings.key_at(place)?;
                    store.listing_view(&key, now).ok().map(|v| v.info)
                },
            )
        })
    }

    /// One page of a tenant's index: up to `limit` places after `cursor`,
    /// each turned into an item by `view` (invisible ones, and places
    /// left meanwhile, are skipped). A record keeps its place while it
    /// lives, so one live for the whole scan is on exactly one page.
    pub(in crate::store) fn page<T>(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
        index: fn(&TenantIndex) -> &std::collections::BTreeSet<u64>,
        view: impl Fn(&Self, u64, MonoTime) -> Option<T>,
    ) -> Result<Page<T>> {
        self.shared.config.check_page_limit(limit)?;
        let start =
            match cursor {
                None => Bound::Unbounded,
                Some(c) => Bound::Excluded(c.as_str().parse::<u64>().map_err(|_| {
                    Error::InvalidArgument {
                        reason: "a page's cursor must be the `next` of an earlier page",
                    }
                })?),
            };
        let Some(t) = self.tenant(tenant) else {
            return Ok(Page {
                items: Vec::new(),
                next: None,
            });
        };
        let places: Vec<u64> = {
            let guard = lock_at(Rung::TenantIndex, &t.tenant.index);
            index(&guard)
                .range((start, Bound::Unbounded))
                .take(limit)
                .copied()
                .collect()
        };
        let now = self.shared.clock.now();
        let next = (places.len() == limit)
            .then(|| places.last().map(|p| Cursor(Arc::from(p.to_string()))))
            .flatten();
        let items = places
            .into_iter()
            .filter_map(|place| view(self, place, now))
            .collect();
        Ok(Page { items, next })
    }
}

impl Store {
    /// Takes a slot for attempt `child` in the visible listing under
    /// `key` ([`Parent::reserve`](crate::store::protocol::attach::Parent::reserve)), in
    /// the one visit that also reads its publication into `origin`:
    /// refused if the listing is not visible or its attempts are at
    /// their cap. The listing's lease is checked after, with the slot
    /// held, and the slot given back if that lease is gone.
    pub(in crate::store) fn take_listing_slot(
        &self,
        key: (TenantId, &str),
        origin: &Cell<u64>,
        child: u64,
        now: MonoTime,
    ) -> Result<()> {
        self.inside_gate();
        let cap = self.shared.config.attempts_per_listing_max;
        let name: &dyn NameLookup = &key;
        // The listing's lease, and whether its slot was taken.
        let mut lease = None;
        let taken = self.shared.listings.update(name, now, None, |l, _| {
            if !l.attached() || !l.owner.valid() {
                return Err(Error::NotFound);
            }
            lease = Some(l.lease());
            if l.attempts.len() >= cap {
                return Err(Error::capacity(
                    Scope::Parent(Collection::Attempts),
                    cap as u64,
                    l.attempts.len() as u64,
                ));
            }
            l.attempts.push(child);
            origin.set(l.origin);
            Ok(((), None))
        });
        // A listing is visible only while its lease is: one whose lease
        // is found gone (its cascade not yet run) is missing, full or not,
        // and takes no attempt.
        let Some(lease) = lease else {
            return Err(Error::NotFound);
        };
        if self.lease_status(key.0, lease, now).is_err() {
            if taken.is_ok() {
                self.give_listing_slot(key, origin.get(), child);
            }
            return Err(Error::NotFound);
        }
        taken.map(|_| ())
    }

    /// Whether the listing under `key` is still the one published as
    /// `origin`, valid, and holds attempt `child`'s slot (searched from
    /// the end, where it was pushed); `None` if the listing is gone.
    pub(in crate::store) fn holds_listing_slot(
        &self,
        key: (TenantId, &str),
        origin: u64,
        child: u64,
    ) -> Option<bool> {
        self.shared.listings.modify(&key as &dyn NameLookup, |l| {
            l.origin == origin && l.owner.valid() && l.attempts.iter().rev().any(|s| *s == child)
        })
    }

    /// Gives attempt `child`'s slot in the listing published as `origin`
    /// back: one entry, from the end.
    pub(in crate::store) fn give_listing_slot(
        &self,
        key: (TenantId, &str),
        origin: u64,
        child: u64,
    ) {
        self.shared.listings.modify(&key as &dyn NameLookup, |l| {
            if l.origin == origin {
                l.attempts.remove_last(child);
            }
        });
    }

    pub(in crate::store) fn retire_listing(
        &self,
        place: u64,
        r: Removed<NameKey, Listing>,
        why: impl Into<Why>,
        now: MonoTime,
        detach: bool,
    ) -> usize {
        let why = why.into();
        self.inside_gate();
        let (tenant, key) = r.key;
        let listing = r.value;
        if listing.attached() {
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
                .remove(&place);
            let id = || RecordId::Listing(Arc::from(key.clone()));
            self.announce(Collection::Listings, tenant, id, &why, || None);
        }
        if detach {
            self.detach_from_lease(listing.lease(), Listing::CHILD, ChildOf::Place(place));
        }
        let children_why = why.for_children(|| {
            self.shared.events.subscribed().then(|| Root {
                collection: Collection::Listings,
                id: RecordId::Listing(Arc::from(key.clone())),
                cause: why.cause(),
            })
        });
        let mut n = 0;
        for seq in listing.attempts.iter() {
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
        if listing.attached() {
            self.release_owner(&listing.owner);
        }
        n
    }

    /// Takes attempt `seq` out of the pending attempts of the listing
    /// published as `origin`.
    pub(in crate::store) fn detach_attempt(
        &self,
        tenant: TenantId,
        listing: &str,
        origin: u64,
        seq: u64,
    ) {
        let key: &dyn NameLookup = &(tenant, listing);
        self.shared.listings.modify(key, |l| {
            if l.origin == origin {
                l.attempts.remove_all(seq);
            }
        });
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use crate::base::time::ManualClock;
    use crate::contract::config::StoreConfig;

    const T: TenantId = TenantId(1);
    const TTL: Duration = Duration::from_secs(60);

    fn store() -> (Store, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new());
        let store = Store::new(StoreConfig::default(), clock.clone()).unwrap();
        (store, clock)
    }

    fn word(s: &Store, key: &str) -> Option<u64> {
        s.shared.listings.word(&(T, key) as &dyn NameLookup)
    }

    /// A listing's attempts allocate nothing while there are none, and
    /// give their list back when the last leaves, whichever way.
    #[test]
    fn attempts_keep_a_list_only_while_there_are_some() {
        let mut a = Attempts::default();
        let seqs = |a: &Attempts| a.iter().copied().collect::<Vec<_>>();
        a.push(7);
        assert!(a.more.is_none(), "one attempt allocates nothing");
        for seq in [8, 7] {
            a.push(seq);
        }
        assert_eq!(seqs(&a), [7, 8, 7]);
        assert_eq!(a.iter().rev().copied().collect::<Vec<_>>(), [7, 8, 7]);
        a.remove_last(7);
        assert_eq!(seqs(&a), [7, 8]);
        a.remove_all(7);
        assert_eq!(seqs(&a), [8]);
        assert_eq!(a.len(), 1);
        assert!(
            a.more.is_none(),
            "the last in the box moved into the record"
        );
        a.remove_last(8);
        assert_eq!((a.len(), a.first), (0, Attempts::NONE));
        for seq in [1, 2, 3] {
            a.push(seq);
        }
        a.remove_last(1);
        assert_eq!(seqs(&a), [2, 3]);
        a.remove_all(2);
        a.remove_all(3);
        assert_eq!(a.len(), 0);
        assert!(a.more.is_none());
    }

    #[test]
    fn a_read_of_a_listing_seen_valid_writes_nothing_to_its_slot() {
        let (s, clock) = store();
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        let published = s.publish(T, lease.id, "lobby", b"mode=ffa", None).unwrap();
        // The first read takes the lock and records the listing as valid.
        s.get_listing(T, "lobby").unwrap();
        let before = word(&s, "lobby").expect("the listing's slot");
        clock.advance(Duration::from_secs(1));
        for _ in 0..100 {
            let info = s.get_listing(T, "lobby").unwrap();
            assert_eq!(info.attrs, b"mode=ffa");
            assert_eq!((info.lease, info.version), (lease.id, published.version));
            assert_eq!(info.remaining, Duration::from_secs(59));
            let read = s.read_listing(T, "lobby", |l, attrs| (l, attrs.to_vec()));
            assert_eq!(read.unwrap(), (lease.id, b"mode=ffa".to_vec()));
        }
        assert_eq!(
            word(&s, "lobby"),
            Some(before),
            "a read took the slot's lock"
        );
        // An update holds the lock, and is seen by the next read.
        let version = s
            .update_listing(T, "lobby", published.version, b"mode=duel")
            .unwrap();
        assert_ne!(word(&s, "lobby"), Some(before));
        let info = s.get_listing(T, "lobby").unwrap();
        assert_eq!((&*info.attrs, info.version), (&b"mode=duel"[..], version));
    }

    #[test]
    fn reads_without_the_lock_answer_what_reads_under_it_answer() {
        let (s, clock) = store();
        let other = TenantId(2);
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        let long_attrs = vec![b'x'; Attrs::INLINE_BYTES + 1];
        let long_name = "a-listing-name-longer-than-23-bytes";
        s.publish(T, lease.id, "lobby", b"short", None).unwrap();
        s.publish(T, lease.id, "big", &long_attrs, None).unwrap();
        s.publish(T, lease.id, long_name, b"n", None).unwrap();
        for _ in 0..2 {
            assert_eq!(s.get_listing(T, "lobby").unwrap().attrs, b"short");
            assert_eq!(s.get_listing(T, "big").unwrap().attrs, &long_attrs[..]);
            assert_eq!(s.get_listing(T, long_name).unwrap().attrs, b"n");
            // The same name under another tenant is another record.
            assert_eq!(s.get_listing(other, "lobby"), Err(Error::NotFound));
            assert_eq!(s.get_listing(T, "lobbz"), Err(Error::NotFound));
        }
        // Attributes that grow out of the words, and back.
        let v = s.get_listing(T, "lobby").unwrap().version;
        let v = s.update_listing(T, "lobby", v, &long_attrs).unwrap();
        assert_eq!(s.get_listing(T, "lobby").unwrap().attrs, &long_attrs[..]);
        s.update_listing(T, "lobby", v, b"small").unwrap();
        assert_eq!(s.get_listing(T, "lobby").unwrap().attrs, b"small");
        // Another tenant's revocation sends the next read to the lock once.
        s.grant(other, "h", TTL, None).unwrap();
        s.revoke_tenant(other).unwrap();
        assert_eq!(s.get_listing(T, "lobby").unwrap().attrs, b"small");
        // Unpublished: gone, and the name is free again.
        s.unpublish(T, "lobby", None).unwrap();
        assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
        s.publish(T, lease.id, "lobby", b"again", None).unwrap();
        assert_eq!(s.get_listing(T, "lobby").unwrap().attrs, b"again");
        // The lease expired: not visible, read with or without the lock.
        clock.advance(TTL);
        assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
        // Its own tenant revoked: not visible.
        let (s, _) = store();
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        s.publish(T, lease.id, "lobby", b"short", None).unwrap();
        s.get_listing(T, "lobby").unwrap();
        s.revoke_tenant(T).unwrap();
        assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
    }

    /// A listing leaving its slot takes its key and attributes back: the
    /// removal's event names it, and a listing published into the same
    /// slot has its own.
    #[test]
    fn a_listing_leaving_its_slot_takes_its_key_and_attributes_back() {
        let (s, _) = store();
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        s.publish(T, lease.id, "lobby", b"first", None).unwrap();
        let events = s.subscribe().unwrap();
        s.unpublish(T, "lobby", None).unwrap();
        let Some(crate::contract::events::Received::Event(event)) = events.try_recv() else {
            panic!("the unpublish's event")
        };
        assert!(format!("{:?}", event.id).contains("lobby"), "{event:?}");
        s.publish(T, lease.id, "other", b"second", None).unwrap();
        assert_eq!(s.get_listing(T, "other").unwrap().attrs, b"second");
        assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
        s.audit().unwrap();
    }
}
