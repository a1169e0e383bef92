//! Admission fairness and the tenant registry (SPEC §6).
//!
//! A doomed operation (one its own tenant's narrow scope refuses: a
//! per-parent cap or the tenant's quota) must never hold room that another
//! tenant needs, not even for an instant; a refusal leaves the tenant
//! registry as it was; and a tenant with nothing left is forgotten, so
//! `tenants_max` bounds live tenants, not every tenant ever seen.
//!
//! The contests run two threads for `RELAYSTORE_ADMISSION_ROUNDS` rounds
//! each (20,000 by default; raise it for a heavy run).

mod common;

use common::{rounds, store_with, A, B, SEC};
use relaystore::{Error, LeaseId, QuotaPolicy, Scope, Store, StoreConfig, TenantId, TenantQuota};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn contest_rounds() -> usize {
    rounds("RELAYSTORE_ADMISSION_ROUNDS", 20_000)
}

/// Which narrow scope must refuse the doomed operation.
#[derive(Clone, Copy, Debug)]
enum Narrow {
    Parent,
    Tenant,
}

fn refused_by(e: &Error, narrow: Narrow) -> bool {
    matches!(
        (e, narrow),
        (
            Error::CapacityExceeded {
                scope: Scope::Parent(_),
                ..
            },
            Narrow::Parent
        ) | (
            Error::CapacityExceeded {
                scope: Scope::Tenant(_),
                ..
            },
            Narrow::Tenant
        )
    )
}

/// Tenant A runs `doomed` in a loop on one thread (each call must be
/// refused by `narrow`), while tenant B runs `fits` on another (each call
/// has room at every instant, so each must succeed). Returns nothing; fails
/// with the count of B's refusals.
fn contest(
    s: &Store,
    narrow: Narrow,
    doomed: impl Fn(&Store) -> Result<(), Error> + Sync,
    fits: impl Fn(&Store) -> Result<(), Error> + Sync,
) {
    let n = contest_rounds();
    let done = AtomicBool::new(false);
    let (refused, first) = std::thread::scope(|scope| {
        let a = scope.spawn(|| {
            // Keep A busy for as long as B runs, at least `n` rounds.
            let mut i = 0;
            while i < n || !done.load(Ordering::Acquire) {
                match doomed(s) {
                    Err(e) if refused_by(&e, narrow) => {}
                    other => {
                        panic!("the doomed operation gave {other:?}, not a {narrow:?} refusal")
                    }
                }
                i += 1;
            }
        });
        let b = scope.spawn(|| {
            let mut refused = 0usize;
            let mut first = None;
            for _ in 0..n {
                if let Err(e) = fits(s) {
                    refused += 1;
                    first.get_or_insert(e);
                }
            }
            done.store(true, Ordering::Release);
            (refused, first)
        });
        let out = b.join().unwrap();
        a.join().unwrap();
        out
    });
    assert_eq!(
        refused, 0,
        "tenant B was refused {refused} of {n} times (first: {first:?}) while only tenant A's own {narrow:?} scope was full"
    );
}

#[test]
fn a_listing_at_its_attempt_cap_costs_other_tenants_no_join() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .attempts_per_listing_max(2)
            .attempts_max(3)
            .replay_max(3),
    );
    for (t, key) in [(A, "a"), (B, "b")] {
        let lease = s.grant(t, "h", SEC * 600, None).unwrap();
        s.publish(t, lease.id, key, b"", None).unwrap();
    }
    for i in 0..2 {
        s.begin_join(A, "a", &format!("c{i}"), SEC * 600, None)
            .unwrap();
    }
    contest(
        &s,
        Narrow::Parent,
        |s| s.begin_join(A, "a", "c", SEC * 600, None).map(drop),
        |s| {
            let t = s.begin_join(B, "b", "c", SEC * 600, None)?;
            s.cancel_join(B, t.attempt)
        },
    );
}

#[test]
fn a_tenant_at_its_attempt_quota_costs_other_tenants_no_join() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .attempts_max(2)
            .replay_max(2)
            .tenant(TenantQuota::default().attempts_max(1)),
    );
    for (t, key) in [(A, "a"), (B, "b")] {
        let lease = s.grant(t, "h", SEC * 600, None).unwrap();
        s.publish(t, lease.id, key, b"", None).unwrap();
    }
    s.begin_join(A, "a", "c", SEC * 600, None).unwrap();
    contest(
        &s,
        Narrow::Tenant,
        |s| s.begin_join(A, "a", "c", SEC * 600, None).map(drop),
        |s| {
            let t = s.begin_join(B, "b", "c", SEC * 600, None)?;
            s.cancel_join(B, t.attempt)
        },
    );
}

#[test]
fn a_lease_at_its_listing_cap_costs_other_tenants_no_publish() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .listings_per_lease_max(1)
            .listings_max(2),
    );
    let la = s.grant(A, "h", SEC * 600, None).unwrap().id;
    let lb = s.grant(B, "h", SEC * 600, None).unwrap().id;
    s.publish(A, la, "a1", b"", None).unwrap();
    contest(
        &s,
        Narrow::Parent,
        |s| s.publish(A, la, "a2", b"", None).map(drop),
        |s| {
            s.publish(B, lb, "b1", b"", None)?;
            s.unpublish(B, "b1", None)
        },
    );
}

#[test]
fn a_tenant_at_its_listing_quota_costs_other_tenants_no_publish() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .listings_max(2)
            .tenant(TenantQuota::default().listings_max(1)),
    );
    let la = s.grant(A, "h", SEC * 600, None).unwrap().id;
    let lb = s.grant(B, "h", SEC * 600, None).unwrap().id;
    s.publish(A, la, "a1", b"", None).unwrap();
    contest(
        &s,
        Narrow::Tenant,
        |s| s.publish(A, la, "a2", b"", None).map(drop),
        |s| {
            s.publish(B, lb, "b1", b"", None)?;
            s.unpublish(B, "b1", None)
        },
    );
}

#[test]
fn a_lease_at_its_presence_cap_costs_other_tenants_no_heartbeat() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .presence_per_lease_max(1)
            .presence_max(2),
    );
    let la = s.grant(A, "h", SEC * 600, None).unwrap().id;
    let lb = s.grant(B, "h", SEC * 600, None).unwrap().id;
    s.heartbeat(A, "m1", SEC * 600, None, Some(la)).unwrap();
    contest(
        &s,
        Narrow::Parent,
        |s| s.heartbeat(A, "m2", SEC * 600, None, Some(la)).map(drop),
        |s| {
            s.heartbeat(B, "n", SEC * 600, None, Some(lb))?;
            s.leave(B, "n")
        },
    );
}

#[test]
fn a_tenant_at_its_presence_quota_costs_other_tenants_no_heartbeat() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .presence_max(2)
            .tenant(TenantQuota::default().presence_max(1)),
    );
    s.heartbeat(A, "m1", SEC * 600, None, None).unwrap();
    // B keeps one record, so its slot in the tenant registry stays put.
    s.grant(B, "h", SEC * 600, None).unwrap();
    contest(
        &s,
        Narrow::Tenant,
        |s| s.heartbeat(A, "m2", SEC * 600, None, None).map(drop),
        |s| {
            s.heartbeat(B, "n", SEC * 600, None, None)?;
            s.leave(B, "n")
        },
    );
}

#[test]
fn a_lease_at_its_lock_cap_costs_other_tenants_no_lock() {
    let (_c, s) = store_with(StoreConfig::default().locks_per_lease_max(1).locks_max(2));
    let la = s.grant(A, "h", SEC * 600, None).unwrap().id;
    let lb = s.grant(B, "h", SEC * 600, None).unwrap().id;
    assert!(s
        .try_lock(A, "l1", "w", SEC * 600, Some(la))
        .unwrap()
        .is_some());
    contest(
        &s,
        Narrow::Parent,
        |s| s.try_lock(A, "l2", "w", SEC * 600, Some(la)).map(drop),
        |s| match s.try_lock(B, "k", "w", SEC * 600, Some(lb))? {
            Some(guard) => guard.release(),
            None => panic!("nobody else holds B's lock"),
        },
    );
}

#[test]
fn a_tenant_at_its_lease_quota_costs_other_tenants_no_grant() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .leases_max(2)
            .tenant(TenantQuota::default().leases_max(1)),
    );
    s.grant(A, "h", SEC * 600, None).unwrap();
    // B keeps a presence record, so its registry slot stays put.
    s.heartbeat(B, "n", SEC * 600, None, None).unwrap();
    contest(
        &s,
        Narrow::Tenant,
        |s| s.grant(A, "h", SEC * 600, None).map(drop),
        |s| {
            let g = s.grant(B, "h", SEC * 600, None)?;
            s.revoke(B, g.id)
        },
    );
}

#[test]
fn a_tenant_at_its_lock_quota_costs_other_tenants_no_lock() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .locks_max(2)
            .tenant(TenantQuota::default().locks_max(1)),
    );
    assert!(s.try_lock(A, "l1", "w", SEC * 600, None).unwrap().is_some());
    s.heartbeat(B, "n", SEC * 600, None, None).unwrap();
    contest(
        &s,
        Narrow::Tenant,
        |s| s.try_lock(A, "l2", "w", SEC * 600, None).map(drop),
        |s| match s.try_lock(B, "k", "w", SEC * 600, None)? {
            Some(guard) => guard.release(),
            None => panic!("nobody else holds B's lock"),
        },
    );
}

/// Tenants from 1000 on get no presence quota at all.
struct NoPresenceFromThousand;

impl QuotaPolicy for NoPresenceFromThousand {
    fn quota(&self, tenant: TenantId) -> TenantQuota {
        TenantQuota::default().presence_max(if tenant.0 >= 1000 { 0 } else { 100 })
    }
}

#[test]
fn a_new_tenant_refused_by_its_own_quota_takes_no_registry_slot() {
    let clock = Arc::new(relaystore::time::ManualClock::new());
    let s = Store::with_policy(
        StoreConfig::default().tenants_max(2),
        clock,
        Arc::new(NoPresenceFromThousand),
    )
    .unwrap();
    s.grant(A, "h", SEC * 600, None).unwrap();
    let next = std::sync::atomic::AtomicU64::new(1000);
    // B registers and is forgotten every round; the doomed new tenants
    // (each a different one) must never take the last registry slot.
    contest(
        &s,
        Narrow::Tenant,
        |s| {
            let t = TenantId(next.fetch_add(1, Ordering::Relaxed));
            s.heartbeat(t, "m", SEC * 600, None, None).map(drop)
        },
        |s| {
            s.heartbeat(B, "n", SEC * 600, None, None)?;
            s.leave(B, "n")
        },
    );
    assert_eq!(s.stats().tenants, 1, "only A holds anything");
}

#[test]
fn refused_creations_by_new_tenants_leave_the_registry_as_it_was() {
    let (clock, s) = store_with(
        StoreConfig::default()
            .tenants_max(3)
            .leases_max(1)
            .presence_max(1)
            .locks_max(1),
    );
    let full = |e: Result<(), Error>| {
        assert!(
            matches!(
                e,
                Err(Error::CapacityExceeded {
                    scope: Scope::Collection(_),
                    ..
                })
            ),
            "{e:?}"
        )
    };
    // One tenant fills every collection the others will ask for.
    s.grant(A, "h", SEC, None).unwrap();
    s.heartbeat(A, "m", SEC, None, None).unwrap();
    assert!(s.try_lock(A, "l", "w", SEC, None).unwrap().is_some());
    for t in [TenantId(10), TenantId(11)] {
        full(s.grant(t, "h", SEC, None).map(drop));
        full(s.heartbeat(t, "m", SEC, None, None).map(drop));
        full(s.try_lock(t, "l", "w", SEC, None).map(drop));
    }
    assert_eq!(s.stats().tenants, 1, "refusals registered tenants");
    clock.advance(SEC * 2);
    s.sweep();
    assert_eq!(
        s.stats().tenants,
        0,
        "a tenant with nothing left is forgotten"
    );
    for t in 20..24 {
        let t = TenantId(t);
        s.heartbeat(t, "m", SEC, None, None).unwrap();
        s.leave(t, "m").unwrap();
    }
}

#[test]
fn tenant_churn_far_past_tenants_max_never_fills_the_registry() {
    let (clock, s) = store_with(StoreConfig::default().tenants_max(100));
    let n = rounds("RELAYSTORE_TENANT_CHURN", 30_000) as u64;
    for i in 0..n {
        let t = TenantId(1_000_000 + i);
        match i % 4 {
            0 => {
                s.heartbeat(t, "m", SEC, None, None).unwrap();
                s.leave(t, "m").unwrap();
            }
            1 => {
                let g = s.try_lock(t, "l", "w", SEC, None).unwrap().unwrap();
                g.release().unwrap();
            }
            2 => {
                // Left to expire: the sweep below forgets the tenant.
                s.grant(t, "h", SEC, None).unwrap();
            }
            _ => {
                let g = s.grant(t, "h", SEC, Some("k")).unwrap();
                s.revoke(t, g.id).unwrap();
                // Its idempotency record holds the tenant until it expires.
            }
        }
        if i % 64 == 63 {
            clock.advance(Duration::from_secs(601));
            s.sweep();
            assert!(s.stats().tenants <= 1, "{:?}", s.stats());
        }
    }
    clock.advance(Duration::from_secs(601));
    s.sweep();
    assert_eq!(s.stats().tenants, 0, "{:?}", s.stats());
}

#[test]
fn a_tenant_at_its_idempotency_quota_costs_other_tenants_no_claim() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .idempotency_max(2)
            .tenant(TenantQuota::default().idempotency_max(1)),
    );
    s.grant(A, "h", SEC * 600, Some("k1")).unwrap();
    // B's claims go through a publish that its revoked lease refuses, so
    // each claim is given back and the last unit is free again.
    s.heartbeat(B, "n", SEC * 600, None, None).unwrap();
    let gone = s.grant(B, "h", SEC * 600, None).unwrap().id;
    s.revoke(B, gone).unwrap();
    contest(
        &s,
        Narrow::Tenant,
        |s| s.grant(A, "h", SEC * 600, Some("k2")).map(drop),
        |s| match s.publish(B, gone, "x", b"", Some("p")) {
            Err(Error::Revoked) => Ok(()),
            Err(e) => Err(e),
            Ok(l) => panic!("published under a revoked lease: {l:?}"),
        },
    );
}

fn lease_quota(leases: u64) -> StoreConfig {
    StoreConfig::default().tenant(TenantQuota::default().leases_max(leases))
}

fn refused_by_tenant_quota(grant: Result<relaystore::LeaseGrant, Error>) -> bool {
    matches!(
        grant,
        Err(Error::CapacityExceeded {
            scope: Scope::Tenant(_),
            ..
        })
    )
}

/// Two grants in a row for one tenant: the thread keeps the tenant's
/// epoch, and its next creations take their holds through it
/// (`store::tenant`'s ground rules).
fn grant_twice(s: &Store, t: TenantId) -> [LeaseId; 2] {
    [(); 2].map(|()| s.grant(t, "h", SEC, None).unwrap().id)
}

/// A tenant forgotten since a thread kept its epoch is registered anew,
/// never held again: here another thread registered it anew and took
/// its two leases, and this thread's grant is counted against that
/// registration, not the forgotten one.
#[test]
fn a_thread_never_holds_a_forgotten_tenant_again() {
    let (_c, s) = store_with(lease_quota(2));
    for lease in grant_twice(&s, A) {
        s.revoke(A, lease).unwrap();
    }
    assert_eq!(s.stats().tenants, 0, "A holds nothing");
    std::thread::scope(|t| t.spawn(|| grant_twice(&s, A)).join().unwrap());
    assert!(refused_by_tenant_quota(s.grant(A, "h", SEC, None)));
    assert_eq!(s.stats().tenants, 1);
}

/// A tenant revoked while something still holds it (an idempotency record)
/// stays registered, in a new epoch; the thread that kept the old one
/// creates in the new one, so what it makes is visible.
#[test]
fn after_a_tenant_revocation_a_thread_creates_in_the_new_epoch() {
    let (_c, s) = store_with(StoreConfig::default());
    s.grant(A, "h", SEC, Some("k")).unwrap();
    grant_twice(&s, A);
    s.revoke_tenant(A).unwrap();
    assert_eq!(s.stats().tenants, 1, "the idempotency record holds A");
    let lease = s.grant(A, "h", SEC, None).unwrap();
    assert!(
        s.get_lease(A, lease.id).is_ok(),
        "the lease was made in the ended epoch"
    );
}

/// One thread creating for the same tenant id in two stores: each
/// creation holds its own store's tenant.
#[test]
fn a_threads_last_hold_is_per_store() {
    let (_c1, one) = store_with(lease_quota(2));
    let (_c2, two) = store_with(lease_quota(2));
    grant_twice(&one, A);
    grant_twice(&two, A);
    assert_eq!((one.stats().tenants, two.stats().tenants), (1, 1));
    assert!(refused_by_tenant_quota(one.grant(A, "h", SEC, None)));
    assert!(refused_by_tenant_quota(two.grant(A, "h", SEC, None)));
}

/// Racing grants of one holder admit exactly its quota; a grant the
/// tenant's quota refuses after the holder's admitted it gives the
/// holder's unit back (all or nothing), so once every lease is revoked the
/// holder has its whole quota again.
#[test]
fn racing_grants_of_one_holder_admit_exactly_its_quota_and_refusals_keep_nothing() {
    for (tenant_max, holder_max, expected) in [(TenantQuota::OFF, 5, 5), (3, 5, 3)] {
        let (_clock, s) = store_with(
            StoreConfig::default().tenant(
                TenantQuota::default()
                    .leases_max(tenant_max)
                    .leases_per_holder_max(holder_max),
            ),
        );
        for round in 0..2 {
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let s = Arc::clone(&s);
                    std::thread::spawn(move || {
                        (0..10)
                            .filter_map(|_| match s.grant(A, "alice", SEC * 60, None) {
                                Ok(g) => Some(g.id),
                                Err(Error::CapacityExceeded { .. }) => None,
                                Err(e) => panic!("an unexpected refusal: {e}"),
                            })
                            .collect::<Vec<LeaseId>>()
                    })
                })
                .collect();
            let granted: Vec<LeaseId> = threads
                .into_iter()
                .flat_map(|t| t.join().unwrap())
                .collect();
            assert_eq!(
                granted.len(),
                expected,
                "round {round}, tenant {tenant_max}"
            );
            let refused = s.grant(A, "alice", SEC * 60, None);
            let (scope, limit) = if tenant_max < holder_max {
                (
                    Scope::Tenant(relaystore::events::Collection::Leases),
                    tenant_max,
                )
            } else {
                (
                    Scope::Holder(relaystore::events::Collection::Leases),
                    holder_max,
                )
            };
            assert_eq!(
                refused.map(drop),
                Err(Error::CapacityExceeded {
                    scope,
                    limit,
                    used: expected as u64
                })
            );
            for id in granted {
                s.revoke(A, id).unwrap();
            }
        }
    }
}
