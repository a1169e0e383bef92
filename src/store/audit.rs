//! `audit`: recompute every counter and index from the records.
//!
//! The store keeps several derived structures next to its records: table
//! ceilings, wheel entries, per-tenant quota counters and indexes, the
//! pending-attempt counter, and each parent's index of its children. The
//! audit rebuilds all of them from the records and reports the first
//! difference. It is what the simulation tests check after every batch of
//! steps, and an operator can run it on a quiet store.

use super::protocol::attach::Child;
use super::tenant::Tenant;
use super::{Collection, NameKey, Store, ON_LEASE};
use crate::base::ids::TenantId;
use crate::base::name::Name;
use crate::base::sync::{lock_at, Arc, Ordering, Rung};
use crate::mem::table::Storage;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The first difference [`Store::audit`] found between the records and a
/// structure derived from them (a counter, an index, a wheel entry).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit: {0}")]
pub struct AuditError(String);

impl AuditError {
    /// What differs, in words.
    pub fn finding(&self) -> &str {
        &self.0
    }
}

/// A lease's children by kind: each [`ON_LEASE`] kind's in its run, then
/// its streams.
type Children = [BTreeSet<Name>; ON_LEASE.len() + 1];
type ChildIndex = BTreeMap<(TenantId, u64), Children>;

/// Where a lease's streams are in [`Children`].
const STREAMS: usize = ON_LEASE.len();

#[derive(Default)]
struct Counts {
    /// Records by collection (attempts: pending ones; replay: all).
    by: [u64; Collection::ALL.len()],
    listing_keys: BTreeSet<Name>,
    members: BTreeSet<Name>,
}

impl Counts {
    fn add(&mut self, collection: Collection) {
        self.by[collection as usize] += 1;
    }
}

impl Store {
    /// Checks that every derived structure agrees with the records. Meant
    /// for a store with no operation in flight (concurrent operations show
    /// up as transient differences). Costs a scan of every table: O(records
    /// + tenants), with the records' ordered indexes rebuilt on the side.
    pub fn audit(&self) -> Result<(), AuditError> {
        self.find_difference().map_err(AuditError)
    }

    /// The first difference between the records and what is derived from
    /// them, described.
    fn find_difference(&self) -> Result<(), String> {
        let check = |what: &str, held: usize, counted: u64, scheduled: usize| {
            if held as u64 != counted || held != scheduled {
                return Err(format!(
                    "{what}: {held} records, {counted} admitted, {scheduled} wheel entries"
                ));
            }
            Ok(())
        };
        check(
            "leases",
            self.shared.leases.len(),
            self.shared.leases.ceiling().used(),
            self.shared.leases.scheduled(),
        )?;
        for kind in &ON_LEASE {
            let (held, counted, scheduled) = (kind.held)(self);
            check(kind.collection.name(), held, counted, scheduled)?;
        }
        check(
            "attempts",
            self.shared.attempts.len(),
            self.shared.attempts.ceiling().used(),
            self.shared.attempts.scheduled(),
        )?;
        check(
            "tombstones",
            self.shared.tombstones.len(),
            self.shared.tombstones.ceiling().used(),
            self.shared.tombstones.scheduled(),
        )?;
        check(
            "idempotency",
            self.shared.idempotency.len(),
            self.shared.idempotency.ceiling().used(),
            self.shared.idempotency.scheduled(),
        )?;
        self.shared.streams.audit()?;
        self.shared.queues.audit()?;
        self.shared.schedules.audit()?;
        check(
            "tenants",
            self.shared.tenants.len(),
            self.shared.tenant_count.used(),
            self.shared.tenants.len(),
        )?;

        // Rebuild per-tenant counts (by the tenant state a record points at)
        // and the parents' child indexes.
        let mut counts: BTreeMap<TenantId, Counts> = BTreeMap::new();
        let mut by_ptr: Vec<(TenantId, Arc<Tenant>)> = Vec::new();
        self.shared
            .tenants
            .for_each(|id, t| by_ptr.push((*id, Arc::clone(&t.tenant))));
        // Which registered tenant owns a tenant state, by its address.
        let owners: HashMap<*const Tenant, TenantId> =
            by_ptr.iter().map(|(id, t)| (Arc::as_ptr(t), *id)).collect();
        let tenant_of = |t: &Tenant| owners.get(&(t as *const Tenant)).copied();
        let mut lease_children: ChildIndex = BTreeMap::new();
        type Places = [Vec<u64>; ON_LEASE.len()];
        let mut lease_places: Vec<((TenantId, u64), Places, BTreeSet<Name>)> = Vec::new();
        let mut listing_children: BTreeMap<(TenantId, Name), BTreeSet<u64>> = BTreeMap::new();
        let mut pending = 0u64;
        let mut problem: Option<String> = None;
        let mut fail = |p: String| {
            problem.get_or_insert(p);
        };

        self.shared.leases.for_each(|seq, lease, _| {
            let tenant = lease.owner.id();
            match tenant_of(lease.owner.tenant()) {
                Some(id) if id == tenant => {}
                _ => fail(format!("lease {seq} points at another tenant's state")),
            }
            let c = counts.entry(tenant).or_default();
            c.add(Collection::Leases);
            // The children's places, named after the walk (a record's name
            // is read at its place, not under this lease's lock).
            if let Some(c) = &lease.children {
                if c.pending_slots() != 0 {
                    fail(format!("lease {seq} keeps slots no creation confirmed"));
                }
                lease_places.push((
                    (tenant, *seq),
                    std::array::from_fn(|run| c.places_of_run(run).collect()),
                    c.streams().iter().cloned().collect::<BTreeSet<_>>(),
                ));
            } else {
                lease_children.insert((tenant, *seq), Children::default());
            }
        });
        // A place no record of the lease's tenant holds is named so, and
        // differs from every child the records name.
        let named = |key: Option<NameKey>, tenant, place: u64| match key {
            Some((t, name)) if t == tenant => name,
            _ => Name::new(&format!("<place {place}: no record>")),
        };
        for ((tenant, seq), places, streams) in lease_places {
            let mut children = Children::default();
            for ((names, kind), places) in children.iter_mut().zip(&ON_LEASE).zip(places) {
                *names = places
                    .into_iter()
                    .map(|place| named((kind.key_at)(self, place), tenant, place))
                    .collect();
            }
            children[STREAMS] = streams;
            lease_children.insert((tenant, seq), children);
        }
        let mut seen_children: ChildIndex = BTreeMap::new();
        for (run, kind) in ON_LEASE.iter().enumerate() {
            (kind.each)(self, &mut |tenant, attached, lease, name| {
                if !attached {
                    let what = kind.collection.name();
                    fail(format!("{what} {name:?} left unattached"));
                    return;
                }
                counts.entry(tenant).or_default().add(kind.collection);
                if let Some(seq) = lease {
                    seen_children.entry((tenant, seq)).or_default()[run].insert(name.clone());
                }
            });
        }
        self.shared.listings.for_each(|(tenant, key), listing, _| {
            if listing.attached() {
                let c = counts.entry(*tenant).or_default();
                c.listing_keys.insert(key.clone());
                listing_children.insert(
                    (*tenant, key.clone()),
                    listing.attempts.iter().copied().collect(),
                );
            }
        });
        self.shared
            .presence
            .for_each(|(tenant, member), presence, _| {
                if presence.attached() {
                    let c = counts.entry(*tenant).or_default();
                    c.members.insert(member.clone());
                }
            });
        for (tenant, seq, name) in self.shared.streams.attached() {
            seen_children.entry((tenant, seq)).or_default()[STREAMS].insert(Name::new(&name));
        }
        let mut seen_attempts: BTreeMap<(TenantId, Name), BTreeSet<u64>> = BTreeMap::new();
        let mut origins: BTreeMap<(TenantId, Name), u64> = BTreeMap::new();
        self.shared.listings.for_each(|k, l, _| {
            origins.insert(k.clone(), l.origin);
        });
        self.shared.attempts.for_each(|seq, attempt, _| {
            let tenant = attempt.owner.id();
            if tenant_of(attempt.owner.tenant()) != Some(tenant) {
                fail(format!("attempt {seq} points at another tenant's state"));
            }
            if !attempt.attached {
                fail(format!("attempt {seq} left unattached"));
                return;
            }
            let c = counts.entry(tenant).or_default();
            c.add(Collection::Replay);
            if !attempt.phase.is_consumed() {
                c.add(Collection::Attempts);
                pending += 1;
                let key = (tenant, attempt.listing.clone());
                if origins.get(&key) == Some(&attempt.origin) {
                    seen_attempts.entry(key).or_default().insert(*seq);
                } else {
                    fail(format!("pending attempt {seq} outlived its listing"));
                }
            }
        });
        self.shared.idempotency.for_each(|(tenant, _), _, _| {
            counts
                .entry(*tenant)
                .or_default()
                .add(Collection::Idempotency)
        });
        if let Some(p) = problem {
            return Err(p);
        }
        if pending != self.shared.pending.used() {
            return Err(format!(
                "{pending} pending attempts, {} admitted",
                self.shared.pending.used()
            ));
        }

        for (id, t) in &by_ptr {
            let c = counts.remove(id).unwrap_or_default();
            // A quota that is switched off keeps no count to compare.
            for what in Collection::ALL {
                let counter = t.quota(what);
                if !counter.is_counted() {
                    continue;
                }
                let (held, admitted) = (c.by[what as usize], counter.used());
                if held != admitted {
                    return Err(format!(
                        "{id} {}: {held} records, {admitted} admitted",
                        what.name()
                    ));
                }
            }
            // Every record holds its tenant once: a join attempt is
            // counted twice (pending and replay), as a replay record.
            let records = c.by.iter().sum::<u64>() - c.by[Collection::Attempts as usize];
            let holds = t.holds.load(Ordering::Acquire);
            if records != holds || holds == 0 {
                return Err(format!(
                    "{id} is registered with {holds} holds and {records} records"
                ));
            }
            // The index names records by their places (read here, not
            // while the records were walked under their slots' locks).
            let places = |names: &BTreeSet<Name>, at: &dyn Fn(&NameKey) -> Option<u64>| {
                names
                    .iter()
                    .map(|name| at(&(*id, name.clone())))
                    .collect::<Option<BTreeSet<u64>>>()
            };
            let listings = places(&c.listing_keys, &|k| {
                self.shared.listings.storage().place_of(k)
            });
            let members = places(&c.members, &|k| self.shared.presence.storage().place_of(k));
            let index = lock_at(Rung::TenantIndex, &t.index);
            let differs = [
                ("listings", Some(&index.listings) != listings.as_ref()),
                ("presence", Some(&index.members) != members.as_ref()),
            ];
            if let Some((what, _)) = differs.iter().find(|d| d.1) {
                return Err(format!(
                    "{id}: tenant index of {what} differs from its records"
                ));
            }
        }
        if let Some((id, _)) = counts.into_iter().next() {
            return Err(format!("records of {id}, which the registry does not know"));
        }
        for (lease, children) in lease_children {
            let seen = seen_children.remove(&lease).unwrap_or_default();
            if children != seen {
                return Err(format!(
                    "lease {} index {children:?} but children {seen:?}",
                    lease.1
                ));
            }
        }
        if let Some((lease, _)) = seen_children.into_iter().next() {
            return Err(format!("children of lease {} outlived it", lease.1));
        }
        for (listing, attempts) in listing_children {
            let seen = seen_attempts.remove(&listing).unwrap_or_default();
            if attempts != seen {
                return Err(format!(
                    "listing {:?} index {attempts:?} but attempts {seen:?}",
                    listing.1
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::base::ids::TenantId;
    use crate::base::time::ManualClock;
    use crate::contract::config::StoreConfig;
    use crate::store::Store;
    use std::sync::Arc;
    use std::time::Duration;

    /// A store with a lease, a listing and a pending join.
    fn busy() -> Store {
        let s = Store::new(StoreConfig::default(), Arc::new(ManualClock::new())).unwrap();
        let t = TenantId(1);
        let g = s.grant(t, "h", Duration::from_secs(60), None).unwrap();
        s.publish(t, g.id, "l", b"", None).unwrap();
        s.begin_join(t, "l", "c", Duration::from_secs(10), None)
            .unwrap();
        s.audit().expect("a consistent store passes");
        s
    }

    #[test]
    fn the_audit_notices_a_leaked_admission_unit() {
        let s = busy();
        assert!(s.shared.leases.ceiling().try_acquire(1));
        assert!(s.audit().unwrap_err().finding().contains("leases"));
    }

    #[test]
    fn the_audit_notices_a_lost_pending_release() {
        let s = busy();
        assert!(s.shared.pending.try_acquire(1));
        assert!(s.audit().unwrap_err().finding().contains("pending"));
    }

    #[test]
    fn the_audit_notices_a_stale_tenant_index() {
        let s = busy();
        let t = s.tenant(TenantId(1)).unwrap();
        // A place no record holds: a slot key at a generation never used.
        let ghost = u64::MAX - 9;
        crate::base::sync::lock_at(crate::base::sync::Rung::TenantIndex, &t.tenant.index)
            .listings
            .insert(ghost);
        assert!(s.audit().unwrap_err().finding().contains("tenant index"));
        crate::base::sync::lock_at(crate::base::sync::Rung::TenantIndex, &t.tenant.index)
            .listings
            .remove(&ghost);
        s.audit().unwrap();
        crate::base::sync::lock_at(crate::base::sync::Rung::TenantIndex, &t.tenant.index)
            .members
            .insert(ghost);
        assert!(s.audit().unwrap_err().finding().contains("tenant index"));
    }

    #[test]
    fn the_audit_notices_a_leases_stale_list_of_children() {
        use super::super::kinds::presence::Presence;
        use super::super::protocol::attach::ChildOf;
        use super::super::protocol::attach::OnLease;
        let members = Presence::CHILD;
        let s = busy();
        let t = TenantId(1);
        let lease = s.list_leases(t, None, 1).unwrap().items[0].id;
        let seq = s.lease_seq(lease).unwrap();
        let now = s.shared.clock.now();
        // A slot taken that no creation confirmed.
        s.take_lease_slot(t, seq, members, None, now).unwrap();
        assert!(s.audit().unwrap_err().finding().contains("confirmed"));
        s.give_lease_slot(seq, members, None);
        s.audit().unwrap();
        // A place no record holds: a slot key at a generation never used.
        s.take_lease_slot(t, seq, members, None, now).unwrap();
        let ghost = u64::MAX - 9;
        let place = ChildOf::Place(ghost);
        assert_eq!(s.confirm_lease_slot(seq, members, place), Some(true));
        let finding = s.audit().unwrap_err();
        assert!(finding.finding().contains("no record"), "{finding}");
        s.detach_from_lease(seq, members, place);
        s.audit().unwrap();
    }

    #[test]
    fn the_audit_notices_a_timer_without_a_record() {
        let s = busy();
        s.shared
            .leases
            .timers_for_audit(&(u64::MAX - 9))
            .wheel
            .schedule(crate::mem::wheel::SplitKey::from(u64::MAX - 9), 1);
        assert!(s.audit().unwrap_err().finding().contains("wheel"));
    }
}
