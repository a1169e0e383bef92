//! Presence: a member's heartbeat record with a TTL.

use crate::base::sync::{lock_at, Arc, Rung};
use crate::contract::events::RecordId;
use crate::contract::relay::PresenceInfo;
use crate::store::protocol::attach::ChildOf;
use crate::store::protocol::attach::{Child, Occupant, OnLease, Parent};
use crate::store::protocol::retire::Why;

use crate::base::attrs::Attrs;
use crate::base::error::{ConflictReason, Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Name;
use crate::base::sync::{AtomicU64, Ordering};
use crate::base::time::MonoTime;
use crate::contract::config::StoreConfig;
use crate::contract::events::Cause;
use crate::contract::relay::Cursor;
use crate::contract::relay::Page;
use crate::mem::named_slab::{NamedSlab, NamedTable, Peeked};
use crate::mem::record::Head;
use crate::mem::record::Stamp;
use crate::mem::table::{Removed, SlotWords};
use crate::store::protocol::retire::Stored;
use crate::store::protocol::slot_parts::{AttrsWords, KeptAttrs, ParentWord, ValidAt};
use crate::store::protocol::visible::Ancestry;
use crate::store::tenant::{Owner, TenantIndex};
use crate::store::{owned_by, Collection, NameKey, NameLookup, Renewal, Store};
use std::time::Duration;

pub(crate) struct Presence {
    pub(in crate::store) owner: Owner,
    /// The lease this presence is attached to (or none), and whether it
    /// is attached yet.
    parent: ParentWord,
    attrs: KeptAttrs,
}

impl Presence {
    /// The lease this presence is attached to, if any.
    pub(in crate::store) fn lease(&self) -> Option<u64> {
        let lease = self.parent.lease();
        (lease != ParentWord::NONE).then_some(lease)
    }
}

/// A presence record's words beside its slot: what a read that takes no
/// lock reads of it (ADR 0078). Its attributes are kept here, and only
/// here, while they fit.
#[derive(Default)]
pub(crate) struct PresenceWords {
    /// The lease's key, or [`ParentWord::NONE`].
    lease: AtomicU64,
    /// Seen attached, with its owner's epoch valid.
    valid_at: ValidAt,
    attrs: AttrsWords,
}

impl SlotWords<Presence> for PresenceWords {
    fn fill(&self, _: &Head, presence: &mut Presence) {
        self.lease.store(presence.parent.lease(), Ordering::Release);
        self.valid_at.reset();
        self.attrs.fill(&mut presence.attrs);
    }

    fn empty(&self, _: &mut Presence) {}
}

impl Stored for Presence {
    type Key = NameKey;
    type Storage = NamedSlab<NameKey, Self, PresenceWords>;

    fn table(store: &Store) -> &NamedTable<NameKey, Presence, PresenceWords> {
        &store.shared.presence
    }

    fn retire(
        store: &Store,
        place: u64,
        removed: Removed<NameKey, Self>,
        why: Why,
        _now: MonoTime,
        detach: bool,
    ) -> usize {
        store.retire_presence(place, removed, why, detach);
        0
    }
}

impl OnLease for Presence {
    const COLLECTION: Collection = Collection::Presence;

    fn cap(config: &StoreConfig) -> usize {
        config.presence_per_lease_max
    }

    fn lease_of(&self) -> Option<u64> {
        self.lease()
    }

    fn key_at(store: &Store, place: u64) -> Option<NameKey> {
        store.shared.presence.key_at(place)
    }

    #[cfg(any(test, feature = "internals"))]
    fn named(key: &NameKey) -> (TenantId, Name) {
        key.clone()
    }
}

impl Child for Presence {
    const QUOTAS: &'static [Collection] = &[Collection::Presence];

    fn attached(&self) -> bool {
        self.parent.attached()
    }

    fn set_attached(&mut self) {
        self.parent.attach();
    }

    fn ancestry(&self) -> Ancestry {
        Ancestry {
            owner_valid: self.owner.valid(),
            lease: self.lease(),
            listing: None,
        }
    }

    const INDEX: Option<fn(u64, &mut TenantIndex)> = Some(|place, index| {
        index.members.insert(place);
    });
}

/// What a read sees of a visible presence record.
struct PresenceSeen<'a> {
    lease: Option<u64>,
    stamp: Stamp,
    attrs: &'a Attrs,
}

impl Store {
    /// Records that `member` is alive for `ttl` (an absolute reset), creating
    /// the record if needed. `attrs`, if given, replace the stored ones.
    /// With `lease`, the record is attached to it and dies with it; a member
    /// already present under a different live lease is
    /// [`Error::Conflict`] (leave first).
    pub fn heartbeat(
        &self,
        tenant: TenantId,
        member: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
        lease: Option<LeaseId>,
    ) -> Result<Renewal> {
        self.check_name(member)?;
        let attrs = attrs.map(|a| self.attrs(a)).transpose()?;
        let lease = lease.map(|l| self.lease_seq(l)).transpose()?;
        self.refuse_if_stopped()?;
        let now = self.shared.clock.now();
        let deadline = self.deadline(now, ttl)?;
        if let Some(seq) = lease {
            self.lease_status(tenant, seq, now)?;
        }
        let name: &dyn NameLookup = &(tenant, member);
        // The owned key, built only if the record is not simply refreshed.
        let mut owned: Option<NameKey> = None;
        let own = || (tenant, Name::new(member));
        // Refresh an existing record, else create one. A create that loses
        // a race with a concurrent create goes round once more.
        for _ in 0..2 {
            let refreshed = self.refresh_presence(name, now, deadline, lease, attrs.as_ref());
            let key = match refreshed {
                Ok(stamp) => return Ok(Renewal::of(stamp, now)),
                Err(Error::NotFound | Error::Expired) => owned.get_or_insert_with(own),
                // Under another lease: taken, unless that lease is gone.
                Err(taken @ Error::Conflict { .. }) => {
                    let key = owned.get_or_insert_with(own);
                    match self.occupant::<Presence>(tenant, key, now) {
                        Occupant::Visible => return Err(taken),
                        Occupant::InFlight => return Err(Error::InFlight),
                        Occupant::Cleared => key,
                    }
                }
                Err(e) => return Err(e),
            };
            let parent = match lease {
                Some(seq) => Parent::Lease {
                    seq,
                    kind: Presence::CHILD,
                },
                None => Parent::None,
            };
            let attrs = attrs.clone().unwrap_or_default();
            let created = self.create(tenant, key.clone(), parent, now, deadline, |owner, _| {
                Presence {
                    owner,
                    parent: ParentWord::new(lease.unwrap_or(ParentWord::NONE)),
                    attrs: KeptAttrs::new(attrs.clone()),
                }
            });
            match created {
                // Someone else created it meanwhile: refresh theirs.
                Err(Error::Conflict { .. }) => {}
                other => return other.map(|stamp| Renewal::of(stamp, now)),
            }
        }
        Err(Error::InFlight)
    }

    /// Moves an existing, attached record's deadline to `deadline`, if it
    /// is under `lease` (else [`Error::Conflict`]); with `attrs`, replaces
    /// its attributes too. Without attributes (the common heartbeat) only
    /// the record's state word changes: a shared shard lock and a CAS, as
    /// for a lease renewal, so a heartbeat holds no write lock against the
    /// other heartbeats, reads and renewals of its shard (ADR 0037).
    fn refresh_presence(
        &self,
        key: &dyn NameLookup,
        now: MonoTime,
        deadline: u64,
        lease: Option<u64>,
        attrs: Option<&Attrs>,
    ) -> Result<Stamp> {
        let check = |v: &Presence, version: &dyn Fn() -> u64| {
            if !v.attached() || !v.owner.valid() {
                Err(Error::NotFound)
            } else if v.lease() != lease {
                Err(Error::conflict(ConflictReason::OtherLease, version()))
            } else {
                Ok(())
            }
        };
        let table = &self.shared.presence;
        match attrs {
            None => table.renew_guarded(key, now, deadline, None, |head, v| {
                check(v, &|| head.stamp().version)
            }),
            Some(attrs) => table
                .update_words(
                    key,
                    now,
                    |_| true,
                    None,
                    |v, words, stamp| {
                        check(v, &|| stamp.version)?;
                        words.attrs.store(&mut v.attrs, attrs.clone());
                        Ok(((), Some(deadline)))
                    },
                )
                .map(|((), stamp)| stamp),
        }
    }

    /// A visible presence record.
    pub fn get_presence(&self, tenant: TenantId, member: &str) -> Result<PresenceInfo> {
        let key = (tenant, self.key_name(member)?);
        self.presence_info(&key, self.shared.clock.now())
    }

    /// Reads a visible presence record in place: `read` gets its
    /// attributes, and nothing is allocated, the member's name included.
    /// The same visibility as [`get_presence`](Self::get_presence) (live,
    /// and its lease visible if it has one), for a relay's packet path;
    /// keep `read` short (it runs under the record's lock when its
    /// attributes are longer than they are kept inline).
    pub fn read_presence<R>(
        &self,
        tenant: TenantId,
        member: &str,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        self.check_name(member)?;
        let name: &dyn NameLookup = &(tenant, member);
        self.visible_presence(name, self.shared.clock.now(), |seen| read(seen.attrs))
    }

    #[inline(always)]
    fn presence_info(&self, key: &NameKey, now: MonoTime) -> Result<PresenceInfo> {
        self.visible_presence(key, now, |seen| PresenceInfo {
            member: key.1.clone(),
            attrs: seen.attrs.clone(),
            lease: seen.lease.map(|seq| self.lease_id(seq)),
            version: seen.stamp.version,
            remaining: seen.stamp.remaining(now),
        })
    }

    /// The one visibility rule of a presence record: attached, its
    /// owner's epoch current, live, and its lease visible if it has one.
    /// `see` gets what was read of it; anything not visible is
    /// `NotFound`, an expired record `Expired`.
    ///
    /// The plain case is read without the slot's lock
    /// ([`NamedTable::peek`]): a record seen valid under its lock since
    /// the last tenant revocation, live, with attributes in its words.
    /// Anything else is read under the lock, which marks the record
    /// valid for the next read.
    #[inline(always)]
    fn visible_presence<R>(
        &self,
        key: &dyn NameLookup,
        now: MonoTime,
        see: impl FnOnce(PresenceSeen<'_>) -> R,
    ) -> Result<R> {
        let peeked = self.shared.presence.peek(key, |head, words| {
            if !words.valid_at.still(&self.shared.revocations) {
                return None;
            }
            let state = head.state();
            if !state.is_live(now) {
                return None;
            }
            // Attributes kept in the record are read under the lock.
            let attrs = words.attrs.peek()?;
            let lease = words.lease.load(Ordering::Acquire);
            Some((lease, head.stamp_of(state), attrs))
        });
        match peeked {
            Peeked::Seen((lease, stamp, attrs)) => {
                let lease = (lease != ParentWord::NONE).then_some(lease);
                self.presence_lease_visible(key.tenant(), lease, now)?;
                // Words no write overlapped: attributes they hold. `see`
                // runs last, so what it makes is made where it is
                // returned (made before the lease's check, it was copied
                // after it, and the copy stalled on its own stores).
                let attrs = Attrs::from_words(attrs).unwrap_or_default();
                Ok(see(PresenceSeen {
                    lease,
                    stamp,
                    attrs: &attrs,
                }))
            }
            Peeked::Missing => Err(Error::NotFound),
            Peeked::Locked => {
                let (lease, seen) = self.visible_presence_locked(key, now, see)?;
                self.presence_lease_visible(key.tenant(), lease, now)?;
                Ok(seen)
            }
        }
    }

    /// `NotFound` unless a presence record's lease, if it has one, is
    /// visible: read after the record's own words.
    #[inline(always)]
    fn presence_lease_visible(
        &self,
        tenant: TenantId,
        lease: Option<u64>,
        now: MonoTime,
    ) -> Result<()> {
        if let Some(lease) = lease.filter(|_| {
            !crate::base::faults::active(crate::base::faults::StoreFault::ChildParentUnread)
        }) {
            self.lease_status(tenant, lease, now)
                .map_err(|_| Error::NotFound)?;
        }
        Ok(())
    }

    /// [`visible_presence`](Self::visible_presence) under the record's
    /// lock: its lease, if it has one, and what `see` made of it.
    #[cold]
    #[inline(never)]
    fn visible_presence_locked<R>(
        &self,
        key: &dyn NameLookup,
        now: MonoTime,
        see: impl FnOnce(PresenceSeen<'_>) -> R,
    ) -> Result<(Option<u64>, R)> {
        let revocations = self.shared.revocations.now();
        let seen = self.shared.presence.read_words(
            key,
            now,
            |_| true,
            |v, words, stamp| {
                let visible = v.attached() && v.owner.valid();
                words.valid_at.mark(visible, revocations);
                visible.then(|| {
                    let seen = words.attrs.with(&v.attrs, |attrs| {
                        see(PresenceSeen {
                            lease: v.lease(),
                            stamp,
                            attrs,
                        })
                    });
                    (v.lease(), seen)
                })
            },
        );
        match seen {
            Ok(Some(seen)) => Ok(seen),
            Ok(None) => Err(Error::NotFound),
            Err(e) => Err(e),
        }
    }

    /// Up to `limit` visible presence records after `cursor`, in the
    /// order of their places, with the same guarantees as
    /// [`Store::list_listings`].
    pub fn list_presence(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<PresenceInfo>> {
        self.page(
            tenant,
            cursor,
            limit,
            |index| &index.members,
            |store, place, now| {
                let key = store.shared.presence.key_at(place)?;
                store.presence_info(&key, now).ok()
            },
        )
    }

    /// Removes a member's presence.
    pub fn leave(&self, tenant: TenantId, member: &str) -> Result<()> {
        let key = (tenant, self.key_name(member)?);
        let now = self.shared.clock.now();
        self.presence_info(&key, now)?;
        let (place, removed) = self.shared.presence.remove_placed(
            &key,
            |v, _, _| owned_by(v.attached() && v.owner.valid()),
            now,
            |&place| place,
        )?;
        self.retire_presence(place, removed, Cause::Released, true);
        Ok(())
    }
}

impl Store {
    pub(in crate::store) fn retire_presence(
        &self,
        place: u64,
        r: Removed<NameKey, Presence>,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        let (tenant, member) = r.key;
        let presence = r.value;
        if let (true, Some(lease)) = (detach, presence.lease()) {
            self.detach_from_lease(lease, Presence::CHILD, ChildOf::Place(place));
        }
        if presence.attached() {
            presence
                .owner
                .tenant()
                .quota(Collection::Presence)
                .release(1);
            lock_at(Rung::TenantIndex, &presence.owner.tenant().index)
                .members
                .remove(&place);
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

    fn word(s: &Store, member: &str) -> Option<u64> {
        s.shared.presence.word(&(T, member) as &dyn NameLookup)
    }

    #[test]
    fn a_read_of_a_member_seen_valid_writes_nothing_to_its_slot() {
        let (s, clock) = store();
        let lease = s.grant(T, "host-a", TTL, None).unwrap();
        let beat = s
            .heartbeat(T, "alice", TTL, Some(b"codec=opus"), Some(lease.id))
            .unwrap();
        // The first read takes the lock and records the member as valid.
        s.get_presence(T, "alice").unwrap();
        let before = word(&s, "alice").expect("the record's slot");
        clock.advance(Duration::from_secs(1));
        for _ in 0..100 {
            let info = s.get_presence(T, "alice").unwrap();
            assert_eq!(info.attrs, b"codec=opus");
            assert_eq!((info.lease, info.version), (Some(lease.id), beat.version));
            assert_eq!(info.remaining, Duration::from_secs(59));
            let read = s.read_presence(T, "alice", |attrs| attrs.to_vec());
            assert_eq!(read.unwrap(), b"codec=opus");
        }
        assert_eq!(
            word(&s, "alice"),
            Some(before),
            "a read took the slot's lock"
        );
        // A heartbeat holds the lock, and is seen by the next read.
        let again = s
            .heartbeat(T, "alice", TTL, Some(b"codec=g711"), Some(lease.id))
            .unwrap();
        assert_ne!(word(&s, "alice"), Some(before));
        let info = s.get_presence(T, "alice").unwrap();
        assert_eq!(
            (&*info.attrs, info.version),
            (&b"codec=g711"[..], again.version)
        );
        assert_eq!(info.remaining, TTL);
    }

    #[test]
    fn reads_without_the_lock_answer_what_reads_under_it_answer() {
        let (s, clock) = store();
        let other = TenantId(2);
        let lease = s.grant(T, "host-a", TTL * 2, None).unwrap();
        let long_attrs = vec![b'x'; Attrs::INLINE_BYTES + 1];
        let long_name = "a-member-name-longer-than-23-bytes";
        s.heartbeat(T, "alice", TTL, Some(b"short"), None).unwrap();
        s.heartbeat(T, "bob", TTL, Some(&long_attrs), Some(lease.id))
            .unwrap();
        s.heartbeat(T, long_name, TTL, Some(b"n"), None).unwrap();
        for _ in 0..2 {
            let alice = s.get_presence(T, "alice").unwrap();
            assert_eq!((&*alice.attrs, alice.lease), (&b"short"[..], None));
            let bob = s.get_presence(T, "bob").unwrap();
            assert_eq!((&*bob.attrs, bob.lease), (&long_attrs[..], Some(lease.id)));
            assert_eq!(s.get_presence(T, long_name).unwrap().attrs, b"n");
            assert_eq!(s.get_presence(other, "alice"), Err(Error::NotFound));
        }
        // Attributes that grow out of the words, and back.
        s.heartbeat(T, "alice", TTL, Some(&long_attrs), None)
            .unwrap();
        assert_eq!(s.get_presence(T, "alice").unwrap().attrs, &long_attrs[..]);
        s.heartbeat(T, "alice", TTL, Some(b"small"), None).unwrap();
        assert_eq!(s.get_presence(T, "alice").unwrap().attrs, b"small");
        // Another tenant's revocation sends the next read to the lock once.
        s.grant(other, "h", TTL, None).unwrap();
        s.revoke_tenant(other).unwrap();
        assert_eq!(s.get_presence(T, "alice").unwrap().attrs, b"small");
        // Left: gone, and the name is free again.
        s.leave(T, "alice").unwrap();
        assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
        s.heartbeat(T, "alice", TTL, Some(b"again"), None).unwrap();
        assert_eq!(s.get_presence(T, "alice").unwrap().attrs, b"again");
        // Its own time ran out: expired, read with or without the lock.
        clock.advance(TTL);
        assert_eq!(s.get_presence(T, "alice"), Err(Error::Expired));
        // Its lease revoked: not visible.
        s.revoke(T, lease.id).unwrap();
        assert_eq!(s.get_presence(T, "bob"), Err(Error::NotFound));
        // Its own tenant revoked: not visible.
        let (s, _) = store();
        s.heartbeat(T, "alice", TTL, Some(b"short"), None).unwrap();
        s.get_presence(T, "alice").unwrap();
        s.revoke_tenant(T).unwrap();
        assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
    }
}
