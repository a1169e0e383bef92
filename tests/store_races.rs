//! The races of SPEC §8 on the real store: every interleaving of whole
//! operations that a test can order deterministically, then many-thread
//! stress runs (8 threads, 10^4 rounds) checking the same properties.
//! The loom models in `loom-tests/store.rs` cover the interleavings inside
//! operations.

use relaystore::time::{Clock, ManualClock};
use relaystore::{Error, JoinTicket, Store, StoreConfig, TenantId};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

const T: TenantId = TenantId(7);
const SEC: Duration = Duration::from_secs(1);
const THREADS: usize = 8;

fn store() -> (Arc<ManualClock>, Arc<Store>) {
    let clock = Arc::new(ManualClock::new());
    let config = StoreConfig::default()
        .ttl_min(Duration::from_millis(10))
        .attempts_per_listing_max(64)
        .listings_per_lease_max(64);
    let store = Arc::new(Store::new(config, clock.clone()).unwrap());
    (clock, store)
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 1], port))
}

// ----- whole-operation interleavings, both orders ---------------------------

#[test]
fn renew_just_before_expiry_survives_the_sweep_and_after_is_refused() {
    let (clock, s) = store();
    let a = s.grant(T, "a", SEC, None).unwrap();
    let b = s.grant(T, "b", SEC, None).unwrap();
    clock.advance(SEC - Duration::from_millis(1));
    s.renew(T, a.id, SEC).unwrap(); // renew, then the sweep at the deadline
    clock.advance(Duration::from_millis(1));
    s.sweep();
    s.get_lease(T, a.id).unwrap();
    assert_eq!(s.renew(T, b.id, SEC), Err(Error::NotFound)); // swept first
}

#[test]
fn renew_then_revoke_and_revoke_then_renew() {
    let (_clock, s) = store();
    let a = s.grant(T, "a", SEC, None).unwrap();
    s.renew(T, a.id, SEC).unwrap();
    s.revoke(T, a.id).unwrap();
    assert_eq!(s.renew(T, a.id, SEC), Err(Error::Revoked));
}

#[test]
fn children_created_before_a_revoke_go_with_it_and_after_are_refused() {
    let (_clock, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    s.publish(T, g.id, "before", b"", None).unwrap();
    let t = s.begin_join(T, "before", "c", SEC * 10, None).unwrap();
    s.heartbeat(T, "m", SEC * 10, None, Some(g.id)).unwrap();
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.get_listing(T, "before"), Err(Error::NotFound));
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)),
        Err(Error::NotFound)
    );
    assert_eq!(s.get_presence(T, "m"), Err(Error::NotFound));
    assert_eq!(s.publish(T, g.id, "after", b"", None), Err(Error::Revoked));
    assert_eq!(
        s.begin_join(T, "before", "c", SEC, None),
        Err(Error::NotFound)
    );
    assert_eq!(
        s.heartbeat(T, "n", SEC, None, Some(g.id)),
        Err(Error::Revoked)
    );
    let st = s.stats();
    assert_eq!((st.listings, st.attempts, st.presence), (0, 0, 0));
}

// ----- many threads ---------------------------------------------------------

fn tickets(s: &Store, n: usize) -> Vec<JoinTicket> {
    let per_listing = 50;
    let mut out = Vec::with_capacity(n);
    let mut lease = s.grant(T, "host", SEC * 3600, None).unwrap();
    for i in 0..n.div_ceil(per_listing) {
        if i % 60 == 59 {
            lease = s.grant(T, "host", SEC * 3600, None).unwrap();
        }
        let key = format!("lobby-{i}");
        s.publish(T, lease.id, &key, b"", None).unwrap();
        for c in 0..per_listing.min(n - out.len()) {
            out.push(
                s.begin_join(T, &key, &format!("c{c}"), SEC * 3600, None)
                    .unwrap(),
            );
        }
    }
    out
}

#[test]
fn eight_threads_racing_bind_and_consume_have_exactly_one_winner_each() {
    let (_clock, s) = store();
    let rounds = 10_000;
    let all = Arc::new(tickets(&s, rounds));
    let barrier = Arc::new(Barrier::new(THREADS));
    let results: Vec<Vec<(bool, bool)>> = (0..THREADS)
        .map(|t| {
            let (s, all, barrier) = (s.clone(), all.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                all.iter()
                    .map(|ticket| {
                        let bound =
                            s.bind_endpoint(T, ticket.attempt, &ticket.token, addr(t as u16));
                        let consumed = s.consume(T, &ticket.token, None);
                        assert!(
                            matches!(
                                bound,
                                Ok(_) | Err(Error::Conflict { .. }) | Err(Error::ReplayRejected)
                            ),
                            "{bound:?}"
                        );
                        assert!(
                            matches!(consumed, Ok(_) | Err(Error::ReplayRejected)),
                            "{consumed:?}"
                        );
                        (bound.is_ok(), consumed.is_ok())
                    })
                    .collect()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    for round in 0..rounds {
        let binds = results.iter().filter(|r| r[round].0).count();
        let consumes = results.iter().filter(|r| r[round].1).count();
        assert_eq!((binds, consumes), (1, 1), "round {round}");
    }
    assert_eq!(s.stats().attempts_pending, 0);
    assert_eq!(
        s.stats().attempts,
        rounds,
        "every consumed token is remembered"
    );
}

#[test]
fn eight_threads_retrying_one_consume_under_its_key_get_one_admission() {
    let (_clock, s) = store();
    let rounds = 2_000;
    let all = Arc::new(tickets(&s, rounds));
    for ticket in all.iter() {
        s.bind_endpoint(T, ticket.attempt, &ticket.token, addr(7))
            .unwrap();
    }
    let barrier = Arc::new(Barrier::new(THREADS));
    let results: Vec<Vec<relaystore::Admission>> = (0..THREADS)
        .map(|_| {
            let (s, all, barrier) = (s.clone(), all.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                all.iter()
                    .enumerate()
                    .map(|(round, ticket)| {
                        let key = format!("admit-{round}");
                        // The key's first call may still be running: a
                        // caller retries `InFlight`.
                        loop {
                            match s.consume(T, &ticket.token, Some(&key)) {
                                Ok(a) => break a,
                                Err(Error::InFlight) => std::thread::yield_now(),
                                Err(e) => panic!("round {round}: {e:?}"),
                            }
                        }
                    })
                    .collect()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    for round in 0..rounds {
        let first = &results[0][round];
        assert_eq!(first.attempt, all[round].attempt, "round {round}");
        for thread in &results[1..] {
            assert_eq!(&thread[round], first, "round {round}");
        }
    }
    // Each token was consumed once: without its key it is a replay.
    for ticket in all.iter() {
        assert_eq!(
            s.consume(T, &ticket.token, None),
            Err(Error::ReplayRejected)
        );
    }
    assert_eq!(s.stats().attempts_pending, 0);
}

#[test]
fn nothing_under_a_lease_is_visible_once_its_revoke_returns() {
    let (_clock, s) = store();
    let rounds = 2000;
    let barrier = Arc::new(Barrier::new(THREADS));
    let lease_slot = Arc::new(Mutex::new(None));
    let created: Arc<Mutex<Vec<JoinTicket>>> = Arc::new(Mutex::new(Vec::new()));
    let revoked = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (s, barrier, lease_slot, created, revoked) = (
                s.clone(),
                barrier.clone(),
                lease_slot.clone(),
                created.clone(),
                revoked.clone(),
            );
            std::thread::spawn(move || {
                for round in 0..rounds {
                    if t == 0 {
                        let g = s.grant(T, "host", SEC * 60, None).unwrap();
                        s.publish(T, g.id, "lobby", b"", None).unwrap();
                        *lease_slot.lock().unwrap() = Some(g.id);
                        created.lock().unwrap().clear();
                        revoked.store(false, Ordering::SeqCst);
                    }
                    barrier.wait();
                    let lease = lease_slot.lock().unwrap().unwrap();
                    if t == 0 {
                        std::thread::yield_now();
                        s.revoke(T, lease).unwrap();
                        revoked.store(true, Ordering::SeqCst);
                        // From here, nothing created under the lease is visible.
                        for ticket in created.lock().unwrap().iter() {
                            let seen = s.bind_endpoint(T, ticket.attempt, &ticket.token, addr(1));
                            assert_eq!(seen, Err(Error::NotFound), "round {round}");
                        }
                        assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
                    } else {
                        for i in 0..4 {
                            let after = revoked.load(Ordering::SeqCst);
                            match t % 3 {
                                0 => {
                                    let r = s.publish(T, lease, &format!("l{t}-{i}"), b"", None);
                                    if after {
                                        assert!(r.is_err(), "publish after revoke succeeded");
                                    }
                                }
                                1 => {
                                    if let Ok(ticket) =
                                        s.begin_join(T, "lobby", &format!("c{t}"), SEC, None)
                                    {
                                        assert!(!after, "join after revoke succeeded");
                                        created.lock().unwrap().push(ticket);
                                    }
                                }
                                _ => {
                                    let r = s.heartbeat(
                                        T,
                                        &format!("m{t}-{i}"),
                                        SEC,
                                        None,
                                        Some(lease),
                                    );
                                    if after {
                                        assert!(r.is_err(), "heartbeat after revoke succeeded");
                                    }
                                }
                            }
                        }
                    }
                    barrier.wait();
                    if t == 0 {
                        let st = s.stats();
                        assert_eq!(
                            (
                                st.leases,
                                st.listings,
                                st.attempts,
                                st.attempts_pending,
                                st.presence
                            ),
                            (0, 0, 0, 0, 0),
                            "round {round}: a child outlived its lease"
                        );
                    }
                    barrier.wait();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn concurrent_duplicates_of_an_idempotent_grant_create_one_lease() {
    let (_clock, s) = store();
    let rounds = 500;
    let barrier = Arc::new(Barrier::new(THREADS));
    let outcomes: Vec<Vec<Result<relaystore::LeaseGrant, Error>>> = (0..THREADS)
        .map(|_| {
            let (s, barrier) = (s.clone(), barrier.clone());
            std::thread::spawn(move || {
                (0..rounds)
                    .map(|round| {
                        barrier.wait();
                        s.grant(T, "host", SEC * 60, Some(&format!("req-{round}")))
                    })
                    .collect()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    for round in 0..rounds {
        let oks: Vec<_> = outcomes
            .iter()
            .filter_map(|o| o[round].as_ref().ok())
            .collect();
        assert!(!oks.is_empty(), "round {round}: nobody got the grant");
        assert!(
            oks.iter().all(|g| *g == oks[0]),
            "round {round}: two different grants"
        );
        for o in &outcomes {
            assert!(
                matches!(&o[round], Ok(_) | Err(Error::InFlight)),
                "{:?}",
                o[round]
            );
        }
    }
    assert_eq!(s.stats().leases, rounds, "exactly one lease per key");
}

#[test]
fn concurrent_renewals_of_one_lease_each_get_their_own_version() {
    let (_clock, s) = store();
    let lease = s.grant(T, "h", SEC * 60, None).unwrap();
    let rounds = 2_000;
    let barrier = Arc::new(Barrier::new(THREADS));
    let mut versions: Vec<u64> = (0..THREADS)
        .map(|_| {
            let (s, barrier) = (s.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                (0..rounds)
                    .map(|_| s.renew(T, lease.id, SEC * 60).unwrap().version)
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    versions.sort_unstable();
    let renewals = (THREADS * rounds) as u64;
    let expected: Vec<u64> = (1..=renewals).map(|n| lease.version + n).collect();
    assert_eq!(versions, expected, "every renewal has a version of its own");
    assert_eq!(
        s.get_lease(T, lease.id).unwrap().version,
        lease.version + renewals,
        "no renewal was lost"
    );
}

#[test]
fn renewals_racing_the_sweep_keep_the_books_exact() {
    let (clock, s) = store();
    let leases: Vec<_> = (0..2000)
        .map(|_| s.grant(T, "h", SEC, None).unwrap().id)
        .collect();
    let leases = Arc::new(leases);
    let stop = Arc::new(AtomicBool::new(false));
    let sweeper = {
        let (s, clock, stop) = (s.clone(), clock.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                clock.advance(Duration::from_millis(7));
                s.sweep();
            }
        })
    };
    let renewers: Vec<_> = (0..THREADS - 1)
        .map(|t| {
            let (s, leases) = (s.clone(), leases.clone());
            std::thread::spawn(move || {
                for round in 0..20 {
                    for (i, id) in leases.iter().enumerate() {
                        if (i + t + round) % 3 == 0 {
                            let r = s.renew(T, *id, SEC);
                            assert!(
                                matches!(r, Ok(_) | Err(Error::Expired) | Err(Error::NotFound)),
                                "{r:?}"
                            );
                        }
                    }
                }
            })
        })
        .collect();
    for r in renewers {
        r.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    sweeper.join().unwrap();
    // Whatever survived is live, and after its deadline everything goes.
    let now = clock.now();
    for id in leases.iter() {
        if let Ok(info) = s.get_lease(T, *id) {
            assert!(
                info.remaining > Duration::ZERO,
                "expired lease visible at {now:?}"
            );
        }
    }
    clock.advance(SEC);
    s.sweep();
    assert_eq!(s.stats().leases, 0, "no lease lost in the bookkeeping");
    for id in leases.iter().take(10) {
        assert_eq!(s.renew(T, *id, SEC), Err(Error::NotFound));
    }
    // A fresh grant is admitted: the counters came back to zero.
    let g = s.grant(T, "h", SEC, None).unwrap();
    s.revoke(T, g.id).unwrap();
}

/// Tenant revocation racing grants, publications and heartbeats under
/// those leases, in the same tenant: whatever was created before a
/// revocation began is invisible once it returns, and the books are exact
/// once the creators stop (the audit needs a quiet store: a grant in flight
/// has reserved room it has not yet filled).
#[test]
fn a_tenant_revocation_hides_everything_created_before_it() {
    let (clock, s) = store();
    // Every round re-reads everything made so far, so the cost grows with
    // the square of the rounds: a few here, more in a heavy run.
    let rounds: usize = std::env::var("RELAYSTORE_REVOKE_ROUNDS")
        .map(|v| v.parse().expect("RELAYSTORE_REVOKE_ROUNDS is a number"))
        .unwrap_or(12);
    let per_round = 200;
    let done: Arc<Mutex<Vec<(relaystore::LeaseId, String)>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let creators: Vec<_> = (0..2)
        .map(|t| {
            let (s, done, stop) = (s.clone(), done.clone(), stop.clone());
            std::thread::spawn(move || {
                // (publications, heartbeats) that succeeded: the race needs both.
                let mut made = (0u64, 0u64);
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let Ok(g) = s.grant(T, "host", SEC * 60, None) else {
                        continue;
                    };
                    let key = format!("l{t}-{i}");
                    // Refused when a revocation got in between.
                    made.0 += u64::from(s.publish(T, g.id, &key, b"", None).is_ok());
                    made.1 += u64::from(s.heartbeat(T, &key, SEC * 60, None, Some(g.id)).is_ok());
                    done.lock().unwrap().push((g.id, key));
                }
                made
            })
        })
        .collect();
    let mut checked = 0;
    let patience = std::time::Instant::now() + Duration::from_secs(60);
    for round in 0..rounds {
        while done.lock().unwrap().len() < per_round * (round + 1) {
            assert!(
                std::time::Instant::now() < patience,
                "round {round}: the creators stopped making progress"
            );
            std::thread::yield_now();
        }
        let before: Vec<_> = done.lock().unwrap().clone();
        s.revoke_tenant(T).unwrap();
        for (id, key) in &before {
            assert!(s.get_lease(T, *id).is_err(), "round {round}: {id:?}");
            assert!(s.get_listing(T, key).is_err(), "round {round}: {key}");
            assert!(s.get_presence(T, key).is_err(), "round {round}: {key}");
        }
        checked += before.len();
    }
    stop.store(true, Ordering::SeqCst);
    for c in creators {
        let (published, heartbeats) = c.join().unwrap();
        assert!(published > 0 && heartbeats > 0, "{published} {heartbeats}");
    }
    assert!(checked >= rounds * per_round);
    s.audit().unwrap();
    // The creators may have filled the tenant's quota in its last epoch.
    s.revoke_tenant(T).unwrap();
    // A grant in the tenant's current epoch is visible; after every TTL
    // passes, nothing of the earlier epochs is left holding room.
    let g = s.grant(T, "host", SEC * 120, None).unwrap();
    assert!(s.get_lease(T, g.id).is_ok());
    clock.advance(SEC * 61);
    s.sweep();
    assert_eq!(s.stats().leases, 1);
    s.audit().unwrap();
}
