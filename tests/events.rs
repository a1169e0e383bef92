//! Removal events and lagging subscribers.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::events::{Cause, Collection, Gap, Received, RecordId, RecvError};
use relaystore::Error;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_lagging_subscriber_is_told_how_many_it_missed_and_continues() {
    let (c, s) = store_with(config().subscriber_buffer_max(3).subscribers_max(1));
    let events = s.subscribe().unwrap();
    assert!(matches!(s.subscribe(), Err(Error::CapacityExceeded { .. })));
    for i in 0..5 {
        s.heartbeat(T, &format!("m{i}"), SEC, None, None).unwrap();
    }
    c.advance(SEC);
    assert_eq!(s.sweep(), 5);
    // The two oldest were dropped: the report names them by number.
    assert_eq!(
        events.try_recv(),
        Some(Received::Lagged {
            missed: 2,
            gaps: vec![Gap {
                tenant: T,
                from: 1,
                to: 2
            }],
            every_tenant: false,
        })
    );
    let rest: Vec<RecordId> = events
        .try_recv_all()
        .into_iter()
        .map(|r| match r {
            Received::Event(e) => {
                assert_eq!(
                    (e.collection, e.cause, e.tenant),
                    (Collection::Presence, Cause::Expired, T)
                );
                e.id
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        rest,
        ["m2", "m3", "m4"].map(|m| RecordId::Member(Arc::from(m)))
    );
    drop(events);
    s.subscribe()
        .expect("a dropped subscription frees its place");
}

/// Polls `future` to completion on the calling thread, parking between
/// polls: an executor with nothing in common with tokio.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// Revokes a fresh lease from another thread after `delay`: one event.
fn revoke_later(s: &relaystore::Store, delay: Duration) -> std::thread::JoinHandle<()> {
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    let s = s.clone();
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        s.revoke(T, g.id).unwrap();
    })
}

fn is_lease_revoked(r: &Received) -> bool {
    matches!(r, Received::Event(e) if e.collection == Collection::Leases && e.cause == Cause::Revoked)
}

#[test]
fn a_blocking_receiver_waits_for_the_next_event_and_times_out_without_one() {
    let (_c, s) = store();
    let events = s.subscribe().unwrap();
    assert_eq!(
        events.blocking_recv_timeout(Duration::from_millis(20)),
        Err(RecvError::Timeout)
    );
    let revoker = revoke_later(&s, Duration::from_millis(20));
    let got = events
        .blocking_recv_timeout(Duration::from_secs(10))
        .unwrap();
    assert!(is_lease_revoked(&got), "{got:?}");
    revoker.join().unwrap();
}

#[test]
fn receivers_learn_the_store_is_gone_after_reading_what_is_buffered() {
    let (_c, s) = store();
    let events = s.subscribe().unwrap();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    s.revoke(T, g.id).unwrap();
    let waiter = {
        let events = s.subscribe().unwrap();
        std::thread::spawn(move || events.blocking_recv_timeout(Duration::from_secs(10)))
    };
    drop(s);
    assert!(is_lease_revoked(&events.blocking_recv().unwrap()));
    assert_eq!(events.blocking_recv(), Err(RecvError::Closed));
    assert_eq!(block_on(events.recv()), Err(RecvError::Closed));
    assert_eq!(waiter.join().unwrap(), Err(RecvError::Closed));
}

#[test]
fn an_async_receiver_wakes_on_tokio_and_on_a_bare_executor() {
    let (_c, s) = store();
    let events = s.subscribe().unwrap();
    let revoker = revoke_later(&s, Duration::from_millis(20));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let got = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), events.recv()).await })
        .expect("woken within the timeout")
        .unwrap();
    assert!(is_lease_revoked(&got), "{got:?}");
    revoker.join().unwrap();

    let revoker = revoke_later(&s, Duration::from_millis(20));
    assert!(is_lease_revoked(&block_on(events.recv()).unwrap()));
    revoker.join().unwrap();
}

#[test]
fn a_dropped_async_receive_loses_no_event() {
    let (_c, s) = store();
    let events = s.subscribe().unwrap();
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    {
        let mut pending = std::pin::pin!(events.recv());
        assert!(pending.as_mut().poll(&mut cx).is_pending());
    }
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    s.revoke(T, g.id).unwrap();
    assert!(is_lease_revoked(&events.try_recv().unwrap()));
}

#[test]
fn a_filtered_subscriber_buffers_only_its_collections_and_never_lags_on_others() {
    let (_c, s) = store_with(config().subscriber_buffer_max(2));
    let members = s.subscribe_to(&[Collection::Presence]).unwrap();
    let everything = s.subscribe().unwrap();
    s.heartbeat(T, "alice", SEC * 10, None, None).unwrap();
    for _ in 0..5 {
        let g = s.grant(T, "host", SEC * 10, None).unwrap();
        s.revoke(T, g.id).unwrap();
    }
    s.leave(T, "alice").unwrap();
    match members.try_recv() {
        Some(Received::Event(e)) => assert_eq!(
            (e.collection, e.cause, e.id),
            (
                Collection::Presence,
                Cause::Released,
                RecordId::Member("alice".into())
            )
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(members.try_recv(), None, "nothing else was buffered");
    assert!(
        matches!(
            everything.try_recv(),
            Some(Received::Lagged { missed: 4, .. })
        ),
        "an unfiltered subscriber with the same buffer lagged"
    );
}

#[test]
fn events_are_numbered_rising_and_a_lag_of_many_tenants_says_so() {
    let (c, s) = store_with(config().subscriber_buffer_max(1));
    let events = s.subscribe().unwrap();
    let g = s.grant(T, "host", SEC * 60, None).unwrap();
    s.publish(T, g.id, "lobby", b"", None).unwrap();
    s.revoke(T, g.id).unwrap();
    // The buffer holds one: the lease's event was dropped for the listing's.
    let lag = events.try_recv();
    let Some(Received::Lagged {
        missed: 1,
        gaps,
        every_tenant: false,
    }) = lag
    else {
        panic!("{lag:?}");
    };
    let Some(Received::Event(listing)) = events.try_recv() else {
        panic!("the listing's event");
    };
    assert_eq!(
        gaps,
        vec![Gap {
            tenant: T,
            from: listing.seq - 1,
            to: listing.seq - 1
        }]
    );
    // More tenants than a report lists.
    let tenants = Gap::LISTED_MAX as u64 + 2;
    for t in 1..=tenants {
        s.heartbeat(relaystore::TenantId(100 + t), "m", SEC, None, None)
            .unwrap();
    }
    c.advance(SEC);
    s.sweep();
    match events.try_recv() {
        Some(Received::Lagged {
            missed,
            gaps,
            every_tenant,
        }) => {
            assert_eq!(missed, tenants - 1);
            assert_eq!(gaps.len(), Gap::LISTED_MAX);
            assert!(every_tenant);
        }
        other => panic!("{other:?}"),
    }
    let Some(Received::Event(last)) = events.try_recv() else {
        panic!("the newest event");
    };
    assert!(last.seq > listing.seq + Gap::LISTED_MAX as u64);
}

#[test]
fn a_subscription_is_an_async_stream_that_ends_after_what_is_buffered() {
    use futures_core::Stream;
    let (_c, s) = store();
    let mut events = s.subscribe().unwrap();
    let mut next = || {
        block_on(std::future::poll_fn(|cx| {
            std::pin::Pin::new(&mut events).poll_next(cx)
        }))
    };
    let revoker = revoke_later(&s, Duration::from_millis(20));
    let got = next().expect("an event from another thread");
    assert!(is_lease_revoked(&got), "{got:?}");
    revoker.join().unwrap();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    s.revoke(T, g.id).unwrap();
    drop(s);
    assert!(
        next().is_some_and(|r| is_lease_revoked(&r)),
        "the buffered event first"
    );
    assert_eq!(next(), None, "then the end");
}
