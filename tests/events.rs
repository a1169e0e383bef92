//! Removal events and lagging subscribers.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::events::{Cause, Collection, Received, RecordId};
use relaystore::{Error, StoreConfig};
use std::sync::Arc;

#[test]
fn a_lagging_subscriber_is_told_how_many_it_missed_and_continues() {
    let (c, s) = store_with(StoreConfig {
        subscriber_buffer_max: 3,
        subscribers_max: 1,
        ..config()
    });
    let events = s.subscribe().unwrap();
    assert!(matches!(s.subscribe(), Err(Error::CapacityExceeded { .. })));
    for i in 0..5 {
        s.heartbeat(T, &format!("m{i}"), SEC, None, None).unwrap();
    }
    c.advance(SEC);
    assert_eq!(s.sweep(), 5);
    assert_eq!(events.try_recv(), Some(Received::Lagged { missed: 2 }));
    let rest: Vec<RecordId> = events
        .drain()
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
