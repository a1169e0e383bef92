//! Drain and readiness (SPEC §7): every creating operation that races the
//! stop leaves nothing behind; the drain window is bounded by
//! configuration; `health()` says `Degraded` whenever authorizations are
//! refused because the expiry driver stalled.
//!
//! The race rounds are `RELAYSTORE_DRAIN_ROUNDS` (600 per operation by
//! default; raise it for a heavy run).

mod common;

use common::{addr, rounds, store, store_with, A, SEC};
use relaystore::{DegradedReason, Error, Health, Store, StoreConfig};
use std::sync::Barrier;
use std::time::Duration;

/// What a racing creation may leave once the store has stopped: nothing
/// that a drain ends (leases and everything under them, presence).
fn assert_nothing_left(s: &Store, op: &str, round: usize) {
    assert_eq!(s.health(), Health::Stopped);
    // The sweep ends the drain: the stop itself revoked nothing.
    assert!(!s.blocking_drained(Duration::ZERO));
    s.sweep();
    assert!(s.blocking_drained(Duration::ZERO));
    let st = s.stats();
    let left = (st.leases, st.listings, st.presence, st.attempts_pending);
    assert_eq!(
        left,
        (0, 0, 0, 0),
        "{op} racing the stop left {st:?} (round {round})"
    );
    assert!(s.list_presence(A, None, 10).unwrap().items.is_empty());
    assert!(s.list_listings(A, None, 10).unwrap().items.is_empty());
}

fn race_the_stop(op: &str, create: impl Fn(&Store) + Sync) {
    let n = rounds("RELAYSTORE_DRAIN_ROUNDS", 600);
    for round in 0..n {
        let (_clock, s) = store();
        let lease = s.grant(A, "h", SEC * 60, None).unwrap().id;
        s.publish(A, lease, "lobby", b"", None).unwrap();
        let start = Barrier::new(2);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                start.wait();
                create(&s);
            });
            start.wait();
            s.begin_drain(Duration::ZERO).unwrap();
        });
        assert_nothing_left(&s, op, round);
    }
}

#[test]
fn a_heartbeat_racing_the_stop_leaves_nothing_behind() {
    race_the_stop("heartbeat", |s| {
        let _ = s.heartbeat(A, "m", SEC * 60, None, None);
    });
}

#[test]
fn a_leased_heartbeat_racing_the_stop_leaves_nothing_behind() {
    race_the_stop("heartbeat with a lease", |s| {
        let lease = s.grant(A, "h2", SEC * 60, None);
        if let Ok(lease) = lease {
            let _ = s.heartbeat(A, "m", SEC * 60, None, Some(lease.id));
        }
    });
}

#[test]
fn grants_publishes_and_joins_racing_the_stop_leave_nothing_behind() {
    race_the_stop("grant, publish and join", |s| {
        if let Ok(lease) = s.grant(A, "h2", SEC * 60, None) {
            let _ = s.publish(A, lease.id, "lobby-2", b"", None);
        }
        let _ = s.begin_join(A, "lobby", "c", SEC * 60, None);
        let _ = s.begin_join(A, "lobby-2", "c", SEC * 60, None);
    });
}

#[test]
fn a_drain_window_past_the_configured_maximum_is_refused() {
    let (_clock, s) = store_with(StoreConfig::default().drain_window_max(SEC * 30));
    for window in [Duration::MAX, SEC * 31] {
        assert!(
            matches!(s.begin_drain(window), Err(Error::InvalidArgument { .. })),
            "{window:?}"
        );
    }
    assert_eq!(s.health(), Health::Ready, "a refused drain changes nothing");
    let remaining = s.begin_drain(SEC * 30).unwrap();
    assert_eq!(s.health(), Health::Draining { remaining });
}

#[test]
fn a_stalled_driver_is_degraded_until_the_next_sweep() {
    let (clock, s) = store();
    let lease = s.grant(A, "h", SEC * 60, None).unwrap().id;
    s.publish(A, lease, "lobby", b"", None).unwrap();
    let t = s.begin_join(A, "lobby", "c", SEC * 60, None).unwrap();
    clock.advance(s.config().driver_stall_max + SEC);
    assert_eq!(
        s.health(),
        Health::Degraded {
            reason: DegradedReason::DriverStalled
        }
    );
    assert_eq!(
        s.bind_endpoint(A, t.attempt, &t.token, addr(1)),
        Err(Error::ServiceUnavailable {
            reason: relaystore::Unavailable::DriverStalled
        })
    );
    s.sweep();
    assert_eq!(s.health(), Health::Ready);
    s.bind_endpoint(A, t.attempt, &t.token, addr(1)).unwrap();
}

/// A subscription ends when the drain does, with the store still held:
/// first every `Drained` event, then `Closed`; one made after the drain
/// is closed from the start, and nothing removed later is announced.
#[test]
fn a_subscription_ends_with_its_stores_drain() {
    use relaystore::events::{Cause, Received, RecvError};
    let (clock, s) = store();
    let events = s.subscribe().unwrap();
    let lease = s.grant(A, "h", SEC * 60, None).unwrap().id;
    s.publish(A, lease, "lobby", b"", None).unwrap();
    s.heartbeat(A, "m", SEC * 60, None, None).unwrap();
    s.begin_drain(SEC).unwrap();
    clock.advance(SEC * 2);
    s.sweep();
    assert!(s.blocking_drained(Duration::ZERO));
    let mut causes = Vec::new();
    loop {
        match events.blocking_recv_timeout(Duration::from_secs(5)) {
            Ok(Received::Event(e)) => causes.push(e.cause),
            Ok(other) => panic!("{other:?}"),
            Err(end) => {
                assert_eq!(end, RecvError::Closed);
                break;
            }
        }
    }
    // The lease, the listing under it, the member.
    assert_eq!(causes, [Cause::Drained, Cause::Cascaded, Cause::Drained]);
    let late = s.subscribe().unwrap();
    assert_eq!(late.try_recv(), None);
    assert_eq!(
        late.blocking_recv_timeout(Duration::from_secs(5)),
        Err(RecvError::Closed)
    );
}
