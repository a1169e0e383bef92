//! Lifecycle and overload: admission under a full store, tenant fairness,
//! all-or-nothing reservations, drain, restart and fail-closed authorization.

use relaystore::events::{Cause, Collection, Received};
use relaystore::quota::{Counter, Reservation};
use relaystore::time::{Clock, ManualClock};
use relaystore::{Error, Health, QuotaPolicy, Scope, Store, StoreConfig, TenantId, TenantQuota};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const A: TenantId = TenantId(1);
const B: TenantId = TenantId(2);
const SEC: Duration = Duration::from_secs(1);

fn store_with(config: StoreConfig) -> (Arc<ManualClock>, Arc<Store>) {
    let clock = Arc::new(ManualClock::new());
    let store = Arc::new(Store::new(config, clock.clone()).unwrap());
    (clock, store)
}

fn store() -> (Arc<ManualClock>, Arc<Store>) {
    store_with(StoreConfig::default())
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 9], port))
}

#[test]
fn a_full_store_refuses_a_million_inserts_and_changes_nothing() {
    let (_clock, s) = store_with(
        StoreConfig::default()
            .leases_max(1000)
            .tenant(TenantQuota::default().leases_max(1_000_000)),
    );
    let held: Vec<_> = (0..1000)
        .map(|_| s.grant(A, "h", SEC * 60, None).unwrap().id)
        .collect();
    let before = (s.digest(), s.stats());
    let refused: u64 = (0..2)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut refused = 0u64;
                for _ in 0..500_000 {
                    match s.grant(A, "h", SEC * 60, None) {
                        Err(Error::CapacityExceeded {
                            scope: Scope::Collection(Collection::Leases),
                            ..
                        }) => refused += 1,
                        other => panic!("admitted or wrong refusal: {other:?}"),
                    }
                }
                refused
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .sum();
    assert_eq!(refused, 1_000_000);
    assert_eq!(
        (s.digest(), s.stats()),
        before,
        "a refusal changed stored state"
    );
    // After N releases, exactly N inserts get in.
    for id in &held[..10] {
        s.revoke(A, *id).unwrap();
    }
    let admitted = (0..100)
        .filter(|_| s.grant(A, "h", SEC * 60, None).is_ok())
        .count();
    assert_eq!(admitted, 10);
    assert_eq!(s.stats().leases, 1000);
}

#[test]
fn a_tenant_at_its_quota_costs_another_tenant_nothing() {
    let (_clock, s) =
        store_with(StoreConfig::default().tenant(TenantQuota::default().leases_max(100)));
    for _ in 0..100 {
        s.grant(A, "a", SEC * 60, None).unwrap();
    }
    let hammer = {
        let s = s.clone();
        std::thread::spawn(move || {
            (0..200_000)
                .filter(|_| {
                    matches!(
                        s.grant(A, "a", SEC * 60, None),
                        Err(Error::CapacityExceeded {
                            scope: Scope::Tenant(Collection::Leases),
                            ..
                        })
                    )
                })
                .count()
        })
    };
    let b_admitted = (0..100)
        .filter(|_| s.grant(B, "b", SEC * 60, None).is_ok())
        .count();
    assert_eq!(hammer.join().unwrap(), 200_000);
    assert_eq!(
        b_admitted, 100,
        "tenant B lost an admission within its quota"
    );
}

#[test]
fn a_refusal_on_the_third_scope_leaves_the_first_two_untouched() {
    let (_clock, s) =
        store_with(StoreConfig::default().tenant(TenantQuota::default().replay_max(1)));
    let g = s.grant(A, "h", SEC * 60, None).unwrap();
    s.publish(A, g.id, "lobby", b"", None).unwrap();
    let t = s.begin_join(A, "lobby", "c1", SEC * 10, None).unwrap();
    s.bind_endpoint(A, t.attempt, &t.token, addr(1)).unwrap();
    s.consume(A, &t.token, None).unwrap(); // pending freed, replay unit kept
    let before = (s.digest(), s.stats());
    // begin_join reserves: store-wide pending, tenant attempts, tenant replay (full).
    assert_eq!(
        (s.begin_join(A, "lobby", "c2", SEC * 10, None)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(Collection::Replay)))
    );
    assert_eq!((s.digest(), s.stats()), before);
    assert_eq!(
        s.stats().attempts_pending,
        0,
        "the first scope was rolled back"
    );
}

#[test]
fn a_reservation_rolls_back_when_its_operation_panics() {
    let scopes = [
        Counter::new(Scope::Named("x"), 10),
        Counter::new(Scope::Named("x"), 10),
        Counter::new(Scope::Named("x"), 10),
    ];
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _held =
            Reservation::acquire(&[(&scopes[0], 2), (&scopes[1], 3), (&scopes[2], 4)]).unwrap();
        assert_eq!(
            scopes.iter().map(Counter::used).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
        panic!("a step of the operation failed");
    }));
    assert!(outcome.is_err());
    assert_eq!(
        scopes.iter().map(Counter::used).collect::<Vec<_>>(),
        vec![0, 0, 0]
    );
    let full = Counter::new(Scope::Named("y"), 0);
    assert!(Reservation::acquire(&[(&scopes[0], 1), (&scopes[1], 1), (&full, 1)]).is_err());
    assert_eq!(
        scopes.iter().map(Counter::used).collect::<Vec<_>>(),
        vec![0, 0, 0]
    );
}

#[test]
fn drain_refuses_new_work_keeps_existing_work_and_stops_at_the_deadline() {
    let (clock, s) = store();
    let events = s.subscribe().unwrap();
    let g = s.grant(A, "host", SEC * 600, None).unwrap();
    s.publish(A, g.id, "lobby", b"", None).unwrap();
    let t = s.begin_join(A, "lobby", "c", SEC * 60, None).unwrap();
    let t2 = s.begin_join(A, "lobby", "c2", SEC * 60, None).unwrap();
    let lock = s.try_lock(A, "job", "w", SEC * 60, None).unwrap().unwrap();
    assert_eq!(s.health(), Health::Ready);

    let remaining = s.begin_drain(SEC * 10).unwrap();
    assert_eq!(remaining, SEC * 10);
    assert_eq!(s.health(), Health::Draining { remaining });
    assert_eq!(
        s.begin_drain(SEC * 100).unwrap(),
        remaining,
        "a second call keeps the deadline"
    );
    assert_eq!(s.grant(A, "x", SEC, None), Err(Error::Draining));
    assert_eq!(s.publish(A, g.id, "other", b"", None), Err(Error::Draining));
    assert_eq!(
        s.begin_join(A, "lobby", "c3", SEC, None),
        Err(Error::Draining)
    );
    assert_eq!(s.heartbeat(A, "m", SEC, None, None), Err(Error::Draining));
    assert_eq!(
        s.try_lock(A, "job2", "w", SEC, None).err(),
        Some(Error::Draining)
    );
    // Existing work continues.
    s.renew(A, g.id, SEC * 600).unwrap();
    s.bind_endpoint(A, t.attempt, &t.token, addr(1)).unwrap();
    s.consume(A, &t.token, None).unwrap();
    lock.renew(SEC * 60).unwrap();
    lock.release().unwrap();

    clock.advance(SEC * 5);
    s.sweep();
    assert!(matches!(s.health(), Health::Draining { .. }));
    clock.advance(SEC * 5);
    s.sweep();
    assert_eq!(s.health(), Health::Stopped);
    let st = s.stats();
    assert_eq!((st.leases, st.listings, st.attempts_pending), (0, 0, 0));
    assert_eq!(s.get_lease(A, g.id).map(drop), Err(Error::Revoked));
    assert_eq!(s.renew(A, g.id, SEC), Err(Error::STOPPED));
    assert_eq!(s.grant(A, "x", SEC, None), Err(Error::STOPPED));
    assert_eq!(s.consume(A, &t2.token, None), Err(Error::STOPPED));
    assert_eq!(s.begin_drain(SEC), Err(Error::STOPPED));
    let drained: Vec<Collection> = events
        .try_recv_all()
        .into_iter()
        .filter_map(|r| match r {
            Received::Event(e) if e.cause == Cause::Drained => Some(e.collection),
            _ => None,
        })
        .collect();
    assert_eq!(drained, vec![Collection::Leases]);
}

#[test]
fn a_drain_stops_the_store_at_its_deadline_and_the_next_sweep_revokes_what_remains() {
    let (clock, s) = store();
    let g = s.grant(A, "host", SEC * 600, None).unwrap();
    let remaining = s.begin_drain(SEC).unwrap();
    clock.advance(remaining);
    // No sweep: the readiness probe stops the store and revokes nothing.
    assert_eq!(s.health(), Health::Stopped);
    assert_eq!(s.renew(A, g.id, SEC), Err(Error::STOPPED));
    assert_eq!(s.stats().leases, 1, "a caller did the drain's work");
    assert!(!s.blocking_drained(Duration::ZERO));
    assert_eq!(s.sweep(), 1);
    assert_eq!(s.stats().leases, 0);
    assert!(s.blocking_drained(Duration::ZERO));
    assert_eq!(s.get_lease(A, g.id).map(drop), Err(Error::Revoked));
    let (_c2, s2) = store();
    s2.grant(A, "host", SEC * 600, None).unwrap();
    s2.begin_drain(Duration::ZERO).unwrap();
    assert_eq!(s2.health(), Health::Stopped, "a zero window stops at once");
    s2.sweep();
    assert!(s2.blocking_drained(Duration::ZERO));
}

#[test]
fn a_drain_ends_on_the_builders_driver_and_wakes_every_waiter() {
    let s = Store::builder()
        .expiry_tick(Duration::from_millis(2))
        .build()
        .unwrap();
    for i in 0..600 {
        s.grant(A, &format!("h{i}"), SEC * 600, None).unwrap();
    }
    s.heartbeat(A, "m", SEC * 600, None, None).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    std::thread::scope(|scope| {
        let blocked = scope.spawn(|| s.blocking_drained(Duration::from_secs(30)));
        s.begin_drain(Duration::from_millis(20)).unwrap();
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), s.drained())
                .await
                .expect("the drain ended on the driver")
        });
        assert!(blocked.join().unwrap());
    });
    // More leases than one batch, and the presence record: all gone.
    let st = s.stats();
    assert_eq!((st.leases, st.presence), (0, 0));
    assert_eq!(s.health(), Health::Stopped);
}

#[test]
fn ids_from_before_a_restart_get_restarted_and_its_tokens_are_unknown() {
    let (_clock, old) = store();
    let g = old.grant(A, "host", SEC * 60, None).unwrap();
    old.publish(A, g.id, "lobby", b"", None).unwrap();
    let t = old.begin_join(A, "lobby", "c", SEC * 10, None).unwrap();
    drop(old);
    let (_clock, new) = store(); // a restart: a new incarnation, empty
    assert_eq!(new.stats().leases, 0);
    let r = Err::<(), _>(Error::Restarted);
    assert_eq!(new.renew(A, g.id, SEC).map(drop), r);
    assert_eq!(new.renew_at(A, g.id, SEC, 1).map(drop), r);
    assert_eq!(new.get_lease(A, g.id).map(drop), r);
    assert_eq!(new.revoke(A, g.id), r);
    assert_eq!(new.observe_endpoint(A, g.id, addr(1)), r);
    assert_eq!(new.endpoints(A, g.id).map(drop), r);
    assert_eq!(new.publish(A, g.id, "lobby", b"", None).map(drop), r);
    assert_eq!(new.heartbeat(A, "m", SEC, None, Some(g.id)).map(drop), r);
    assert_eq!(new.try_lock(A, "l", "w", SEC, Some(g.id)).map(|_| ()), r);
    assert_eq!(new.cancel_join(A, t.attempt), r);
    assert_eq!(new.get_attempt(A, t.attempt).map(drop), r);
    // A join token is a client's: from before the restart it is as
    // unknown as a made-up one.
    let unknown = Err::<(), _>(Error::NotFound);
    assert_eq!(
        new.bind_endpoint(A, t.attempt, &t.token, addr(1)).map(drop),
        unknown
    );
    assert_eq!(new.consume(A, &t.token, None).map(drop), unknown);
    assert_eq!(
        Error::Restarted.to_string(),
        "store restarted since this id was issued"
    );
}

const STALLED: Error = Error::ServiceUnavailable {
    reason: relaystore::Unavailable::DriverStalled,
};

#[test]
fn a_stalled_driver_fails_authorizations_closed_and_leaves_nothing() {
    let (clock, s) = store();
    let g = s.grant(A, "host", SEC * 600, None).unwrap();
    s.publish(A, g.id, "lobby", b"", None).unwrap();
    let t = s.begin_join(A, "lobby", "c", SEC * 60, None).unwrap();
    s.bind_endpoint(A, t.attempt, &t.token, addr(1)).unwrap();
    clock.advance(SEC * 6); // past driver_stall_max (5 s) with no sweep
    let before = (s.digest(), s.stats());
    assert_eq!(s.begin_join(A, "lobby", "c2", SEC * 10, None), Err(STALLED));
    assert_eq!(s.consume(A, &t.token, None), Err(STALLED));
    assert_eq!(
        s.bind_endpoint(A, t.attempt, &t.token, addr(1)),
        Err(STALLED)
    );
    assert_eq!((s.digest(), s.stats()), before, "no partial attempt left");
    s.sweep(); // the driver comes back
    s.consume(A, &t.token, None).unwrap();
    s.begin_join(A, "lobby", "c2", SEC * 10, None).unwrap();
}

#[test]
fn a_full_replay_store_refuses_joins_and_leaves_nothing() {
    let (_clock, s) = store_with(StoreConfig::default().replay_max(2));
    let g = s.grant(A, "host", SEC * 600, None).unwrap();
    s.publish(A, g.id, "lobby", b"", None).unwrap();
    for c in ["c1", "c2"] {
        let t = s.begin_join(A, "lobby", c, SEC * 60, None).unwrap();
        s.bind_endpoint(A, t.attempt, &t.token, addr(1)).unwrap();
        s.consume(A, &t.token, None).unwrap();
    }
    let before = (s.digest(), s.stats());
    assert_eq!(
        (s.begin_join(A, "lobby", "c3", SEC * 10, None)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Collection(Collection::Replay)))
    );
    assert_eq!((s.digest(), s.stats()), before);
}

#[test]
fn a_quota_policy_gives_tenants_different_room() {
    struct Tiered;
    impl QuotaPolicy for Tiered {
        fn quota(&self, tenant: TenantId) -> TenantQuota {
            TenantQuota::default().leases_max(if tenant == A { 1 } else { 3 })
        }
    }
    let clock = Arc::new(ManualClock::new());
    let s = Store::with_policy(StoreConfig::default(), clock, Arc::new(Tiered)).unwrap();
    let admitted = |t| {
        (0..5)
            .filter(|_| s.grant(t, "h", SEC, None).is_ok())
            .count()
    };
    assert_eq!((admitted(A), admitted(B)), (1, 3));
}

#[test]
fn a_switched_off_tenant_quota_leaves_only_the_store_ceiling() {
    // Tenant A has no lease quota; tenant B keeps a quota of 2.
    struct OffForA;
    impl QuotaPolicy for OffForA {
        fn quota(&self, tenant: TenantId) -> TenantQuota {
            if tenant == A {
                TenantQuota::unlimited()
            } else {
                TenantQuota::default().leases_max(2)
            }
        }
    }
    let config = StoreConfig::default()
        .leases_max(10)
        .tenant(TenantQuota::default().leases_max(1));
    let clock = Arc::new(ManualClock::new());
    let s = Store::with_policy(config, clock.clone(), Arc::new(OffForA)).unwrap();
    let b: Vec<_> = (0..3).map(|_| s.grant(B, "h", SEC, None)).collect();
    assert!(b[0].is_ok() && b[1].is_ok());
    assert_eq!(
        b[2].as_ref().map(drop).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(Collection::Leases)))
    );
    // A takes the rest of the store-wide ceiling, then meets it.
    let a: Vec<_> = (0..8)
        .map(|_| s.grant(A, "h", SEC, None).unwrap())
        .collect();
    assert_eq!(
        (s.grant(A, "h", SEC, None)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Collection(Collection::Leases)))
    );
    s.audit().unwrap();
    // Releasing and expiring keep the books straight with nothing counted.
    s.revoke(A, a[0].id).unwrap();
    s.grant(A, "h", SEC, None).unwrap();
    clock.advance(SEC * 2);
    s.sweep();
    assert_eq!(s.stats().leases, 0);
    s.audit().unwrap();
    assert_eq!(s.grant(A, "h", SEC, None).map(|_| ()), Ok(()));
}

#[test]
fn the_clock_trait_object_is_what_decides() {
    let (clock, s) = store();
    let g = s.grant(A, "h", SEC, None).unwrap();
    clock.jump_wall_backward(SEC * 3600);
    s.get_lease(A, g.id).unwrap();
    clock.jump_wall_forward(SEC * 7200);
    s.get_lease(A, g.id).unwrap();
    assert_eq!(clock.now().as_millis(), 0);
}
