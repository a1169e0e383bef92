//! One visibility rule on every path (SPEC §4): a record is observable only
//! while it and every ancestor are live and unrevoked, so every path answers
//! an attempt under an expired (unswept) lease as if it were missing.

mod common;

use common::{addr, store, store_with, A, SEC};
use relaystore::{Error, StoreConfig};

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
    assert_eq!(s.consume(A, &bound.token, None), Err(Error::NotFound));
    assert_eq!(s.cancel_join(A, pending.attempt), Err(Error::NotFound));
    assert_eq!(s.cancel_join(A, bound.attempt), Err(Error::NotFound));
}

/// A join takes its slot in the listing before it looks at the listing's
/// lease: under an expired (unswept) lease it is refused as missing, and
/// the slot it took is given back.
#[test]
fn a_join_under_an_expired_lease_is_missing_and_takes_nothing() {
    let (clock, s) = store();
    let lease = s.grant(A, "h", SEC, None).unwrap().id;
    s.publish(A, lease, "lobby", b"", None).unwrap();
    s.begin_join(A, "lobby", "c1", SEC * 60, None).unwrap();
    clock.advance(SEC * 2); // the lease has expired; nothing swept yet
    let before = s.stats();
    assert_eq!(
        s.begin_join(A, "lobby", "c2", SEC * 60, None),
        Err(Error::NotFound)
    );
    assert_eq!(s.stats(), before, "a refused join changed nothing");
    s.audit().unwrap();
    s.sweep();
    let after = s.stats();
    assert_eq!((after.listings, after.attempts), (0, 0));
}

/// A full listing under an expired lease is missing, not full: the lease
/// is looked at whether or not a slot was free.
#[test]
fn a_full_listing_under_an_expired_lease_is_missing_not_full() {
    let (clock, s) = store_with(StoreConfig::default().attempts_per_listing_max(1));
    let lease = s.grant(A, "h", SEC, None).unwrap().id;
    s.publish(A, lease, "lobby", b"", None).unwrap();
    s.begin_join(A, "lobby", "c1", SEC * 60, None).unwrap();
    assert!(s
        .begin_join(A, "lobby", "c2", SEC * 60, None)
        .unwrap_err()
        .capacity_scope()
        .is_some());
    clock.advance(SEC * 2);
    assert_eq!(
        s.begin_join(A, "lobby", "c2", SEC * 60, None),
        Err(Error::NotFound)
    );
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

/// The in-place reads (`read_listing`, `read_presence`) answer exactly as
/// the owned ones (`get_listing`, `get_presence`) at every step of a
/// record's life: live, its own expiry, its lease's expiry (unswept),
/// revocation, and a name never used.
#[test]
fn in_place_reads_see_what_the_owned_reads_see() {
    let (clock, s) = store();
    let lease = s.grant(A, "h", SEC * 10, None).unwrap().id;
    s.publish(A, lease, "lobby", b"mode=ffa", None).unwrap();
    s.heartbeat(A, "perm", SEC * 3, Some(b"p"), Some(lease))
        .unwrap();
    s.heartbeat(A, "alone", SEC * 20, Some(b"a"), None).unwrap();
    let agree = |step: &str| {
        for key in ["lobby", "nothing"] {
            let owned = s.get_listing(A, key).map(|l| (l.lease, l.attrs.to_vec()));
            let in_place = s.read_listing(A, key, |lease, attrs| (lease, attrs.to_vec()));
            assert_eq!(in_place, owned, "{step}: listing {key}");
        }
        for member in ["perm", "alone", "nothing"] {
            let owned = s.get_presence(A, member).map(|p| p.attrs.to_vec());
            let in_place = s.read_presence(A, member, |attrs| attrs.to_vec());
            assert_eq!(in_place, owned, "{step}: presence {member}");
        }
    };
    agree("live");
    assert_eq!(s.read_listing(A, "lobby", |_, a| a.len()), Ok(8));
    assert_eq!(
        s.read_presence(A, "perm", |a| a.to_vec()),
        Ok(b"p".to_vec())
    );
    clock.advance(SEC * 4); // "perm" expired, unswept
    agree("own expiry");
    assert_eq!(s.read_presence(A, "perm", |_| ()), Err(Error::Expired));
    s.heartbeat(A, "perm", SEC * 30, None, Some(lease)).unwrap();
    clock.advance(SEC * 7); // the lease expired, unswept: "perm" with it
    agree("lease expiry");
    assert_eq!(s.read_listing(A, "lobby", |_, _| ()), Err(Error::NotFound));
    assert_eq!(s.read_presence(A, "perm", |_| ()), Err(Error::NotFound));
    assert_eq!(
        s.read_presence(A, "alone", |a| a.to_vec()),
        Ok(b"a".to_vec())
    );
    let lease = s.grant(A, "h", SEC * 10, None).unwrap().id;
    s.publish(A, lease, "lobby", b"", None).unwrap();
    s.revoke(A, lease).unwrap();
    agree("revoked");
    assert_eq!(
        s.read_listing(A, "", |_, _| ()),
        s.get_listing(A, "").map(|_| ()),
        "an empty name is refused alike"
    );
}
