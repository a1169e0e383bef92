//! Records of the kinds a relay declares (ADR 0080): one table for every
//! declared kind, a record named within its lease and kind by a caller's
//! name, living for a TTL of its kind's range, and going with its lease.

use crate::base::attrs::Attrs;
use crate::base::collection::Kind;
use crate::base::error::{Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Name;
use crate::base::time::MonoTime;
use crate::contract::config::StoreConfig;
use crate::contract::events::{Cause, RecordId};
use crate::contract::kinds::RecordKind;
use crate::contract::relay::RecordInfo;
use crate::contract::rules::TtlRange;
use crate::mem::named_slab::{NamedSlab, NamedTable, OwnedSlotKey, Peeked, SlotKey, KEY_WORDS};
use crate::mem::quota::Counter;
use crate::mem::record::{Head, Stamp};
use crate::mem::table::{Removed, SlotWords};
use crate::store::protocol::attach::{tagged, Child, ChildOf, OnLease, Parent, KIND_BITS};
use crate::store::protocol::retire::{Stored, Why};
use crate::store::protocol::slot_parts::{AttrsWords, KeptAttrs, ParentWord, ValidAt};
use crate::store::protocol::visible::Ancestry;
use crate::store::tenant::{Owner, Tenant};
use crate::store::{owned_by, Collection, Renewal, Store};
use std::time::Duration;

/// A declared record's key: its tenant, its lease's key with its kind's
/// number in the kind bits ([`tagged`]), and its name. A name of up to 15
/// bytes is kept in the words beside the record's slot (the tenant, the
/// lease and kind word, the name's first two words), so a read compares
/// it there; a longer one is kept in the record.
pub(crate) type RecordKey = (TenantId, u64, Name);

impl SlotKey for RecordKey {
    #[inline]
    fn key_words(&self) -> Option<[u64; KEY_WORDS]> {
        match Name::to_words(&self.2)? {
            [a, b, 0] => Some([self.0 .0, self.1, a, b]),
            _ => None,
        }
    }
}

impl OwnedSlotKey for RecordKey {
    fn from_key_words([tenant, lease, a, b]: [u64; KEY_WORDS]) -> Option<Self> {
        Some((TenantId(tenant), lease, Name::from_words([a, b, 0])?))
    }
}

/// The kind and the lease's key a record key's second word holds.
fn split(word: u64) -> (Kind, u64) {
    let kind = Kind::at(((word & KIND_BITS) >> KIND_BITS.trailing_zeros()) as usize)
        .expect("four bits name one of KINDS_MAX kinds");
    (kind, word & !KIND_BITS)
}

pub(crate) struct Declared {
    owner: Owner,
    /// The lease the record hangs from, and whether it is attached yet.
    parent: ParentWord,
    attrs: KeptAttrs,
}

/// A declared record's words beside its slot: what a read that takes no
/// lock reads of it.
#[derive(Default)]
pub(crate) struct DeclaredWords {
    /// Seen attached, with its owner's epoch valid.
    valid_at: ValidAt,
    attrs: AttrsWords,
}

impl SlotWords<Declared> for DeclaredWords {
    fn fill(&self, _: &Head, record: &mut Declared) {
        self.valid_at.reset();
        self.attrs.fill(&mut record.attrs);
    }

    fn empty(&self, _: &mut Declared) {}
}

impl Stored for Declared {
    type Key = RecordKey;
    type Storage = NamedSlab<RecordKey, Self, DeclaredWords>;

    fn table(store: &Store) -> &NamedTable<RecordKey, Declared, DeclaredWords> {
        &store.shared.records
    }

    fn retire(
        store: &Store,
        place: u64,
        removed: Removed<RecordKey, Self>,
        why: Why,
        _now: MonoTime,
        detach: bool,
    ) -> usize {
        store.retire_record(place, removed, why, detach);
        0
    }
}

impl OnLease for Declared {
    const COLLECTION: Collection = Collection::Records;

    /// Each kind has its own cap ([`LeaseChild::of_kind`]); the
    /// collection's list has none of its own.
    ///
    /// [`LeaseChild::of_kind`]: crate::store::protocol::attach::LeaseChild::of_kind
    fn cap(_: &StoreConfig) -> usize {
        0
    }

    fn lease_of(&self) -> Option<u64> {
        Some(self.parent.lease())
    }

    fn key_at(store: &Store, place: u64) -> Option<RecordKey> {
        store.shared.records.key_at(place)
    }

    #[cfg(any(test, feature = "internals"))]
    fn named((tenant, word, name): &RecordKey) -> (TenantId, Name) {
        let (kind, _) = split(*word);
        (*tenant, Name::new(&format!("{}/{name}", kind.index())))
    }
}

impl Child for Declared {
    const QUOTAS: &'static [Collection] = &[Collection::Records];

    fn attached(&self) -> bool {
        self.parent.attached()
    }

    fn set_attached(&mut self) {
        self.parent.attach();
    }

    fn ancestry(&self) -> Ancestry {
        Ancestry {
            owner_valid: self.owner.valid(),
            lease: Some(self.parent.lease()),
            listing: None,
        }
    }

    fn kind_counters<'s, 't>(
        store: &'s Store,
        tenant: &'t Tenant,
        (_, word, _): &RecordKey,
    ) -> Option<(&'t Counter, &'s Counter)> {
        let (kind, _) = split(*word);
        Some((
            tenant.kind_quota(kind)?,
            store.shared.kind_ceilings.get(kind.index())?,
        ))
    }
}

/// A declared record's store-wide counters, one per kind, in the kinds'
/// order.
pub(in crate::store) fn kind_ceilings(kinds: &[RecordKind]) -> Box<[Counter]> {
    (0..kinds.len())
        .filter_map(Kind::at)
        .map(|kind| {
            let scope = crate::base::error::Scope::KindCeiling(kind);
            Counter::new(scope, kinds[kind.index()].max)
        })
        .collect()
}

impl Store {
    /// The kind the store declared under `name`; [`Error::NotFound`] if
    /// it declared none.
    pub fn kind(&self, name: &str) -> Result<Kind> {
        crate::contract::kinds::find(&self.shared.config.kinds, name)
    }

    /// The declaration of `kind`, refused if the store declared none at
    /// its place.
    fn declared(&self, kind: Kind) -> Result<&RecordKind> {
        crate::contract::kinds::declared(&self.shared.config.kinds, kind)
    }

    /// Puts the record `name` of `kind` under `lease`, live for `ttl` (an
    /// absolute reset, within the kind's TTL range): creates it, or renews
    /// it and, with `attrs`, replaces its attributes. A new record is
    /// refused with [`Error::CapacityExceeded`] at its kind's cap per
    /// lease, quota per tenant or ceiling ([`Scope::KindParent`],
    /// [`Scope::KindTenant`], [`Scope::KindCeiling`]), and with the
    /// records' collection's own limits. It goes with its lease (cause
    /// `Cascaded`).
    ///
    /// [`Scope::KindParent`]: crate::Scope::KindParent
    /// [`Scope::KindTenant`]: crate::Scope::KindTenant
    /// [`Scope::KindCeiling`]: crate::Scope::KindCeiling
    pub fn put_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
    ) -> Result<Renewal> {
        let declared = self.declared(kind)?;
        self.check_name(name)?;
        let attrs = attrs.map(|a| self.attrs(a)).transpose()?;
        let seq = self.lease_seq(lease)?;
        self.refuse_if_stopped()?;
        let now = self.shared.clock.now();
        let deadline = TtlRange::new(declared.ttl_min, declared.ttl_max)?.deadline(now, ttl)?;
        self.lease_status(tenant, seq, now)?;
        let key: RecordKey = (tenant, tagged(seq, kind), Name::new(name));
        // Renew an existing record, else create one. A create that loses a
        // race with a concurrent create goes round once more.
        for _ in 0..2 {
            match self.refresh_record(&key, now, deadline, attrs.as_ref()) {
                Ok(stamp) => return Ok(Renewal::of(stamp, now)),
                Err(Error::NotFound | Error::Expired) => {}
                Err(e) => return Err(e),
            }
            let parent = Parent::Lease {
                seq,
                kind: Declared::CHILD.of_kind(kind),
            };
            let attrs = attrs.clone().unwrap_or_default();
            let created = self.create(tenant, key.clone(), parent, now, deadline, |owner, _| {
                Declared {
                    owner,
                    parent: ParentWord::new(seq),
                    attrs: KeptAttrs::new(attrs),
                }
            });
            match created {
                // Someone else created it meanwhile: renew theirs.
                Err(Error::Conflict { .. }) => {}
                other => return other.map(|stamp| Renewal::of(stamp, now)),
            }
        }
        Err(Error::InFlight)
    }

    /// Renews the record `name` of `kind` under `lease` for `ttl` (within
    /// the kind's range), keeping its attributes; [`Error::NotFound`] if
    /// there is none.
    pub fn renew_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        ttl: Duration,
    ) -> Result<Renewal> {
        let declared = self.declared(kind)?;
        self.check_name(name)?;
        let seq = self.lease_seq(lease)?;
        let now = self.shared.clock.now();
        let deadline = TtlRange::new(declared.ttl_min, declared.ttl_max)?.deadline(now, ttl)?;
        self.lease_status(tenant, seq, now)
            .map_err(|_| Error::NotFound)?;
        let key: RecordKey = (tenant, tagged(seq, kind), Name::new(name));
        self.refresh_record(&key, now, deadline, None)
            .map(|stamp| Renewal::of(stamp, now))
    }

    /// Moves an attached record's deadline to `deadline`; with `attrs`,
    /// replaces its attributes too.
    fn refresh_record(
        &self,
        key: &RecordKey,
        now: MonoTime,
        deadline: u64,
        attrs: Option<&Attrs>,
    ) -> Result<Stamp> {
        let table = &self.shared.records;
        let visible = |v: &Declared| {
            if v.attached() && v.owner.valid() {
                Ok(())
            } else {
                Err(Error::NotFound)
            }
        };
        match attrs {
            None => table.renew_guarded(key, now, deadline, None, |_, v| visible(v)),
            Some(attrs) => table
                .update_words(
                    key,
                    now,
                    |_| true,
                    None,
                    |v, words, _| {
                        visible(v)?;
                        words.attrs.store(&mut v.attrs, attrs.clone());
                        Ok(((), Some(deadline)))
                    },
                )
                .map(|((), stamp)| stamp),
        }
    }

    /// The visible record `name` of `kind` under `lease`.
    pub fn get_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
    ) -> Result<RecordInfo> {
        self.declared(kind)?;
        self.check_name(name)?;
        let seq = self.lease_seq(lease)?;
        let key: RecordKey = (tenant, tagged(seq, kind), Name::new(name));
        self.record_info(&key, kind, lease, self.shared.clock.now())
    }

    /// The visible record under `key` (of `kind`, under `lease`) as a
    /// read returns it.
    fn record_info(
        &self,
        key: &RecordKey,
        kind: Kind,
        lease: LeaseId,
        now: MonoTime,
    ) -> Result<RecordInfo> {
        self.visible_record(key, now, |stamp, attrs| RecordInfo {
            kind,
            lease,
            name: key.2.clone(),
            attrs: attrs.clone(),
            version: stamp.version,
            remaining: stamp.remaining(now),
        })
    }

    /// Reads the visible record `name` of `kind` under `lease` in place:
    /// `read` gets its attributes, and nothing is allocated for a name of
    /// up to 23 bytes. Keep `read` short (it runs under the record's lock
    /// when the attributes or the name are longer than a slot keeps
    /// beside it).
    pub fn read_record<R>(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        self.declared(kind)?;
        self.check_name(name)?;
        let seq = self.lease_seq(lease)?;
        let key: RecordKey = (tenant, tagged(seq, kind), Name::new(name));
        self.visible_record(&key, self.shared.clock.now(), |_, attrs| read(attrs))
    }

    /// The one visibility rule of a declared record: attached, its
    /// owner's epoch current, live, and its lease visible. Anything not
    /// visible is `NotFound`, an expired record `Expired`.
    ///
    /// The plain case is read without the slot's lock: a record seen
    /// valid under its lock since the last tenant revocation, live, with
    /// its key and attributes in its words. Anything else is read under
    /// the lock, which marks the record valid for the next read.
    fn visible_record<R>(
        &self,
        key: &RecordKey,
        now: MonoTime,
        see: impl FnOnce(Stamp, &Attrs) -> R,
    ) -> Result<R> {
        let (tenant, word, _) = key;
        let (_, seq) = split(*word);
        let peeked = self.shared.records.peek(key, |head, words| {
            if !words.valid_at.still(&self.shared.revocations) {
                return None;
            }
            let state = head.state();
            if !state.is_live(now) {
                return None;
            }
            let attrs = words.attrs.peek()?;
            Some((head.stamp_of(state), attrs))
        });
        let seen = match peeked {
            Peeked::Seen((stamp, attrs)) => {
                self.lease_status(*tenant, seq, now)
                    .map_err(|_| Error::NotFound)?;
                let attrs = Attrs::from_words(attrs).unwrap_or_default();
                return Ok(see(stamp, &attrs));
            }
            Peeked::Missing => return Err(Error::NotFound),
            Peeked::Locked => {
                let revocations = self.shared.revocations.now();
                self.shared.records.read_words(
                    key,
                    now,
                    |_| true,
                    |v, words, stamp| {
                        let visible = v.attached() && v.owner.valid();
                        words.valid_at.mark(visible, revocations);
                        visible.then(|| words.attrs.with(&v.attrs, |attrs| see(stamp, attrs)))
                    },
                )
            }
        };
        let seen = seen?.ok_or(Error::NotFound)?;
        self.lease_status(*tenant, seq, now)
            .map_err(|_| Error::NotFound)?;
        Ok(seen)
    }

    /// The visible records of `kind` under `lease`, in the order they were
    /// made: at most the kind's `per_lease_max`, so in one answer. A lease
    /// that is not visible has none ([`Error::NotFound`]).
    pub fn list_records(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
    ) -> Result<Vec<RecordInfo>> {
        self.declared(kind)?;
        let seq = self.lease_seq(lease)?;
        let now = self.shared.clock.now();
        self.lease_status(tenant, seq, now)
            .map_err(|_| Error::NotFound)?;
        let child = Declared::CHILD.of_kind(kind);
        let places = self
            .shared
            .leases
            .read(&seq, now, |l, _| {
                l.children
                    .as_deref()
                    .map(|c| c.places(child).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .map_err(|_| Error::NotFound)?;
        Ok(places
            .into_iter()
            .filter_map(|place| {
                let key = self.shared.records.key_at(place)?;
                (key.0 == tenant).then_some(())?;
                self.record_info(&key, kind, lease, now).ok()
            })
            .collect())
    }

    /// Removes the record `name` of `kind` under `lease` (cause
    /// `Released`); [`Error::NotFound`] if there is no visible one.
    pub fn remove_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
    ) -> Result<()> {
        self.declared(kind)?;
        self.check_name(name)?;
        let seq = self.lease_seq(lease)?;
        let key: RecordKey = (tenant, tagged(seq, kind), Name::new(name));
        let now = self.shared.clock.now();
        self.visible_record(&key, now, |_, _| ())?;
        let (place, removed) = self.shared.records.remove_placed(
            &key,
            |v, _, _| owned_by(v.attached() && v.owner.valid()),
            now,
            |&place| place,
        )?;
        self.retire_record(place, removed, Cause::Released, true);
        Ok(())
    }

    pub(in crate::store) fn retire_record(
        &self,
        place: u64,
        r: Removed<RecordKey, Declared>,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        let (tenant, word, name) = r.key;
        let (kind, seq) = split(word);
        let record = r.value;
        if detach {
            let child = Declared::CHILD.of_kind(kind);
            self.detach_from_lease(seq, child, ChildOf::Place(place));
        }
        if record.attached() {
            let owner = record.owner.tenant();
            owner.quota(Collection::Records).release(1);
            if let Some(counter) = owner.kind_quota(kind) {
                counter.release(1);
            }
            if let Some(counter) = self.shared.kind_ceilings.get(kind.index()) {
                counter.release(1);
            }
            self.announce(
                Collection::Records,
                tenant,
                || RecordId::Record {
                    kind,
                    lease: self.lease_id(seq),
                    name: std::sync::Arc::from(name.as_str()),
                },
                &why,
                || None,
            );
            self.release_owner(&record.owner);
        }
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use crate::base::error::Scope;
    use crate::base::sync::Arc;
    use crate::base::time::ManualClock;
    use crate::contract::events::{Event, Received};

    const T: TenantId = TenantId(1);
    const TTL: Duration = Duration::from_secs(60);

    fn store(kinds: Vec<RecordKind>) -> (Store, Arc<ManualClock>, Kind, Kind) {
        let clock = Arc::new(ManualClock::new());
        let config = StoreConfig::default().kinds(kinds);
        let store = Store::new(config, clock.clone()).unwrap();
        let (a, b) = (Kind::at(0).unwrap(), Kind::at(1).unwrap());
        (store, clock, a, b)
    }

    fn two_kinds() -> Vec<RecordKind> {
        vec![
            RecordKind::new("permission").ttl_max(Duration::from_secs(300)),
            RecordKind::new("channel"),
        ]
    }

    fn events(sub: &crate::mem::events::Subscription) -> Vec<Event> {
        std::iter::from_fn(|| sub.try_recv())
            .map(|r| match r {
                Received::Event(e) => e,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    /// A record is named by its tenant, its lease, its kind and its name:
    /// the same name under another kind, lease or tenant is another
    /// record.
    #[test]
    fn a_record_is_its_kinds_and_its_leases_own() {
        let (s, clock, perm, chan) = store(two_kinds());
        assert_eq!(s.kind("channel"), Ok(chan));
        assert_eq!(s.kind("nope"), Err(Error::NotFound));
        let l1 = s.grant(T, "relay-a", TTL * 10, None).unwrap().id;
        let l2 = s.grant(T, "relay-a", TTL * 10, None).unwrap().id;
        let other = s.grant(TenantId(2), "relay-a", TTL * 10, None).unwrap().id;
        let put = s
            .put_record(T, perm, l1, "10.0.0.1", TTL, Some(b"a"))
            .unwrap();
        s.put_record(T, chan, l1, "10.0.0.1", TTL, Some(b"b"))
            .unwrap();
        s.put_record(T, perm, l2, "10.0.0.1", TTL, Some(b"c"))
            .unwrap();
        s.put_record(TenantId(2), perm, other, "10.0.0.1", TTL, Some(b"d"))
            .unwrap();
        let read = |kind, lease| s.read_record(T, kind, lease, "10.0.0.1", |a| a.to_vec());
        assert_eq!(read(perm, l1).unwrap(), b"a");
        assert_eq!(read(chan, l1).unwrap(), b"b");
        assert_eq!(read(perm, l2).unwrap(), b"c");
        assert_eq!(
            s.get_record(T, perm, other, "10.0.0.1"),
            Err(Error::NotFound)
        );
        let info = s.get_record(T, perm, l1, "10.0.0.1").unwrap();
        assert_eq!((info.kind, info.lease, &*info.name), (perm, l1, "10.0.0.1"));
        assert_eq!((info.version, info.remaining), (put.version, TTL));
        // A put renews (an absolute reset) and may replace the attributes.
        clock.advance(Duration::from_secs(10));
        assert_eq!(
            s.get_record(T, perm, l1, "10.0.0.1").unwrap().remaining,
            TTL - Duration::from_secs(10)
        );
        s.put_record(T, perm, l1, "10.0.0.1", TTL, None).unwrap();
        let info = s.get_record(T, perm, l1, "10.0.0.1").unwrap();
        assert_eq!((&*info.attrs, info.remaining), (&b"a"[..], TTL));
        s.renew_record(T, perm, l1, "10.0.0.1", TTL * 2).unwrap();
        assert_eq!(
            s.get_record(T, perm, l1, "10.0.0.1").unwrap().remaining,
            TTL * 2
        );
        assert_eq!(
            s.renew_record(T, perm, l1, "10.0.0.2", TTL),
            Err(Error::NotFound)
        );
        // Listed under its lease and kind, in the order made.
        s.put_record(T, perm, l1, "10.0.0.2", TTL, None).unwrap();
        let names = |kind, lease| -> Vec<String> {
            let list = s.list_records(T, kind, lease).unwrap();
            list.iter().map(|r| r.name.to_string()).collect()
        };
        assert_eq!(names(perm, l1), ["10.0.0.1", "10.0.0.2"]);
        assert_eq!(names(chan, l1), ["10.0.0.1"]);
        assert_eq!(names(perm, l2), ["10.0.0.1"]);
        assert_eq!(s.list_records(TenantId(2), perm, l1), Err(Error::NotFound));
        // Removed: gone, and the name is free again.
        s.remove_record(T, perm, l1, "10.0.0.1").unwrap();
        assert_eq!(
            s.remove_record(T, perm, l1, "10.0.0.1"),
            Err(Error::NotFound)
        );
        assert_eq!(names(perm, l1), ["10.0.0.2"]);
        assert_eq!(read(chan, l1).unwrap(), b"b");
        s.put_record(T, perm, l1, "10.0.0.1", TTL, Some(b"again"))
            .unwrap();
        assert_eq!(read(perm, l1).unwrap(), b"again");
        s.audit().unwrap();
    }

    /// A kind's TTL range, its name rules and an undeclared kind are
    /// refused with typed errors, and refusals leave nothing behind.
    #[test]
    fn bad_input_is_refused_and_leaves_nothing() {
        let (s, _, perm, _) = store(two_kinds());
        let lease = s.grant(T, "relay-a", TTL, None).unwrap().id;
        let too_long = Duration::from_secs(301);
        for refused in [
            s.put_record(T, perm, lease, "p", too_long, None),
            s.put_record(T, perm, lease, "p", Duration::from_millis(10), None),
            s.put_record(T, Kind::at(2).unwrap(), lease, "p", TTL, None),
            s.put_record(T, perm, lease, &"n".repeat(129), TTL, None),
            s.put_record(T, perm, lease, "p", TTL, Some(&[0; 1025])),
        ] {
            assert!(
                matches!(refused, Err(Error::InvalidArgument { .. })),
                "{refused:?}"
            );
        }
        assert_eq!(
            s.put_record(T, perm, lease, "", TTL, None),
            Err(Error::InvalidName)
        );
        assert_eq!(s.stats().records, 0);
        // A lease another tenant's, or one revoked.
        assert!(s
            .put_record(TenantId(2), perm, lease, "p", TTL, None)
            .is_err());
        s.revoke(T, lease).unwrap();
        assert_eq!(
            s.put_record(T, perm, lease, "p", TTL, None),
            Err(Error::Revoked)
        );
        assert_eq!(s.stats().records, 0);
        s.audit().unwrap();
    }

    /// Each of a kind's limits refuses with its own scope, counts only
    /// its kind, and has its unit back when a record goes.
    #[test]
    fn each_limit_of_a_kind_refuses_with_its_scope() {
        let kinds = vec![
            RecordKind::new("permission")
                .per_lease_max(2)
                .per_tenant_max(3)
                .max(4),
            RecordKind::new("channel"),
        ];
        let (s, _, perm, chan) = store(kinds);
        let grant = |t: u64| s.grant(TenantId(t), "relay", TTL, None).unwrap().id;
        let (a, b) = (grant(1), grant(1));
        let put =
            |t: u64, lease, name: &str| s.put_record(TenantId(t), perm, lease, name, TTL, None);
        let scope = |r: Result<Renewal>| match r {
            Err(Error::CapacityExceeded { scope, .. }) => scope,
            other => panic!("{other:?}"),
        };
        put(1, a, "1").unwrap();
        put(1, a, "2").unwrap();
        assert_eq!(scope(put(1, a, "3")), Scope::KindParent(perm));
        // Another kind under the same lease is not counted against it.
        s.put_record(T, chan, a, "3", TTL, None).unwrap();
        put(1, b, "3").unwrap();
        assert_eq!(scope(put(1, b, "4")), Scope::KindTenant(perm));
        let c = grant(2);
        put(2, c, "1").unwrap();
        assert_eq!(scope(put(2, c, "2")), Scope::KindCeiling(perm));
        // A refusal took nothing; a removal gives its units back.
        assert_eq!(s.stats().records, 5);
        s.remove_record(T, perm, a, "1").unwrap();
        put(2, c, "2").unwrap();
        s.remove_record(TenantId(2), perm, c, "2").unwrap();
        put(1, a, "1").unwrap();
        // A renewal of a record that exists takes no new unit.
        put(1, a, "1").unwrap();
        s.audit().unwrap();
    }

    /// A record goes with its lease (cascaded, the lease its root), runs
    /// out on its own (expired), or is removed (released), each announced
    /// once with its kind, lease and name.
    #[test]
    fn removals_are_announced_with_their_cause() {
        let (s, clock, perm, chan) = store(two_kinds());
        let sub = s.subscribe_to(&[Collection::Records]).unwrap();
        let lease = s.grant(T, "relay-a", TTL * 10, None).unwrap().id;
        s.put_record(T, perm, lease, "short", Duration::from_secs(1), None)
            .unwrap();
        s.put_record(T, chan, lease, "gone", TTL, None).unwrap();
        s.put_record(T, perm, lease, "kept", TTL, None).unwrap();
        s.remove_record(T, chan, lease, "gone").unwrap();
        clock.advance(Duration::from_secs(2));
        assert_eq!(s.get_record(T, perm, lease, "short"), Err(Error::Expired));
        s.sweep();
        s.revoke(T, lease).unwrap();
        let seen: Vec<_> = events(&sub)
            .into_iter()
            .map(|e| (e.id, e.cause, e.root.map(|r| r.id)))
            .collect();
        let id = |kind, name: &str| RecordId::Record {
            kind,
            lease,
            name: name.into(),
        };
        assert_eq!(
            seen,
            [
                (id(chan, "gone"), Cause::Released, None),
                (id(perm, "short"), Cause::Expired, None),
                (
                    id(perm, "kept"),
                    Cause::Cascaded,
                    Some(RecordId::Lease(lease))
                ),
            ]
        );
        assert_eq!(s.stats().records, 0);
        s.audit().unwrap();
    }

    /// A tenant's revocation takes its records with its leases: gone from
    /// the table, their units back, their removal announced.
    #[test]
    fn a_tenant_revocation_takes_its_records() {
        let kinds = vec![RecordKind::new("permission").per_tenant_max(2).max(2)];
        let (s, _, perm, _) = store(kinds);
        let sub = s.subscribe_to(&[Collection::Records]).unwrap();
        let lease = s.grant(T, "relay-a", TTL, None).unwrap().id;
        s.put_record(T, perm, lease, "a", TTL, None).unwrap();
        s.put_record(T, perm, lease, "b", TTL, None).unwrap();
        s.revoke_tenant(T).unwrap();
        s.sweep();
        assert_eq!(s.stats().records, 0);
        let gone: Vec<_> = events(&sub).into_iter().map(|e| e.cause).collect();
        assert_eq!(gone, [Cause::Cascaded, Cause::Cascaded]);
        let lease = s.grant(T, "relay-a", TTL, None).unwrap().id;
        s.put_record(T, perm, lease, "a", TTL, None).unwrap();
        s.put_record(T, perm, lease, "b", TTL, None).unwrap();
        s.audit().unwrap();
    }

    /// A read of a record seen valid writes nothing to its slot; a name
    /// longer than the slot's words keeps is read under the lock, alike.
    #[test]
    fn reads_without_the_lock_answer_what_reads_under_it_answer() {
        let (s, _, perm, _) = store(two_kinds());
        let lease = s.grant(T, "relay-a", TTL * 10, None).unwrap().id;
        let long = "a-name-longer-than-15-bytes";
        let attrs = vec![b'x'; Attrs::INLINE_BYTES + 1];
        s.put_record(T, perm, lease, "short", TTL, Some(b"in words"))
            .unwrap();
        s.put_record(T, perm, lease, long, TTL, Some(&attrs))
            .unwrap();
        let seq = s.lease_seq(lease).unwrap();
        let word = |name: &str| {
            s.shared
                .records
                .word(&(T, tagged(seq, perm), Name::new(name)))
        };
        s.get_record(T, perm, lease, "short").unwrap();
        let before = word("short").expect("its slot");
        for _ in 0..10 {
            assert_eq!(
                s.get_record(T, perm, lease, "short").unwrap().attrs,
                b"in words"
            );
            assert_eq!(
                s.get_record(T, perm, lease, long).unwrap().attrs,
                &attrs[..]
            );
        }
        assert_eq!(word("short"), Some(before), "a read took the slot's lock");
        // Its lease revoked: no longer visible, whichever way it is read.
        let (s2, _, perm2, _) = store(two_kinds());
        let l = s2.grant(T, "relay-a", TTL, None).unwrap().id;
        s2.put_record(T, perm2, l, "short", TTL, None).unwrap();
        s2.get_record(T, perm2, l, "short").unwrap();
        s2.revoke_tenant(T).unwrap();
        assert_eq!(s2.get_record(T, perm2, l, "short"), Err(Error::NotFound));
    }
}
