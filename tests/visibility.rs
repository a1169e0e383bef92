//! One visibility rule on every path (SPEC §4): a record is observable only
//! while it and every ancestor are live and unrevoked, so every path answers
//! an attempt under an expired (unswept) lease as if it were missing.

mod common;

use common::{addr, store, A, SEC};
use relaystore::Error;

#[test]
fn every_path_treats_an_attempt_under_an_expired_lease_as_missing() {
    let (clock, s) = store();
    let lease = s.grant(A, "h", SEC, None).unwrap().id;
    s.publish(A, lease, "lobby", b"", None).unwrap();
    let pending = s.begin_join(A, "lobby", "c1", SEC * 60, None).unwrap();
    let bound = s.begin_join(A, "lobby", "c2", SEC * 60, None).unwrap();
    s.bind_endpoint(A, bound.attempt, &bound.token, addr(2))
        .unwrap();
    clock.advance(SEC * 2); // the lease has expired; nothing swept yet
    assert_eq!(
        s.bind_endpoint(A, pending.attempt, &pending.token, addr(1)),
        Err(Error::NotFound)
    );
    assert_eq!(s.consume(A, &bound.token), Err(Error::NotFound));
    assert_eq!(s.cancel_join(A, pending.attempt), Err(Error::NotFound));
    assert_eq!(s.cancel_join(A, bound.attempt), Err(Error::NotFound));
}

#[test]
fn every_path_treats_an_attempt_under_a_revoked_listing_as_missing() {
    let (_clock, s) = store();
    let lease = s.grant(A, "h", SEC * 60, None).unwrap().id;
    s.publish(A, lease, "lobby", b"", None).unwrap();
    let t = s.begin_join(A, "lobby", "c1", SEC * 60, None).unwrap();
    s.revoke_listing(A, "lobby").unwrap();
    assert_eq!(
        s.bind_endpoint(A, t.attempt, &t.token, addr(1)),
        Err(Error::NotFound)
    );
    assert_eq!(s.cancel_join(A, t.attempt), Err(Error::NotFound));
}
