//! Join attempts: begin, bind, consume, replay, cancel, caps.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::events::Collection;
use relaystore::{ConflictReason, Error, Scope, Store};

#[test]
fn join_bind_consume_and_replay() {
    let (c, s) = store();
    hosted(&s);
    let t = s.begin_join(T, "lobby", "client", SEC * 10, None).unwrap();
    assert_eq!(
        s.consume(T, &t.token, None),
        Err(Error::Conflict {
            reason: ConflictReason::NotBound,
            current_version: s_version(&s, &t)
        })
    );
    let b = s.bind_endpoint(T, t.attempt, &t.token, addr(1)).unwrap();
    assert_eq!(b.addr, addr(1));
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)).unwrap(),
        b,
        "same bind repeats"
    );
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(2)),
        Err(Error::Conflict {
            reason: ConflictReason::BoundElsewhere,
            current_version: b.version
        })
    );
    let a = s.consume(T, &t.token, None).unwrap();
    assert_eq!(
        (a.client.as_ref(), a.listing.as_ref(), a.addr),
        ("client", "lobby", addr(1))
    );
    assert_eq!(s.consume(T, &t.token, None), Err(Error::ReplayRejected));
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)),
        Err(Error::ReplayRejected)
    );
    // Remembered past the attempt's own deadline, until deadline + grace.
    c.advance(SEC * 14);
    s.sweep();
    assert_eq!(s.consume(T, &t.token, None), Err(Error::ReplayRejected));
    c.advance(SEC);
    s.sweep();
    assert_eq!(s.consume(T, &t.token, None), Err(Error::NotFound));
    assert_eq!(s.stats().attempts, 0);
}

#[test]
fn an_admission_names_its_client_whatever_its_length() {
    // Clients up to 23 bytes are kept inside the attempt, longer ones out
    // of line: both come back whole, and a refused name is refused.
    let (_c, s) = store();
    hosted(&s);
    let longest = "c".repeat(128);
    let wide = "é".repeat(12); // 24 bytes
    for client in ["x", &"a".repeat(23), &"b".repeat(24), &wide, &longest] {
        let t = s.begin_join(T, "lobby", client, SEC * 10, None).unwrap();
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)).unwrap();
        let a = s.consume(T, &t.token, None).unwrap();
        assert_eq!(&*a.client, client);
    }
    assert_eq!(
        s.begin_join(T, "lobby", "", SEC * 10, None).map(|_| ()),
        Err(Error::InvalidName)
    );
    let too_long = "d".repeat(129);
    assert!(matches!(
        s.begin_join(T, "lobby", &too_long, SEC * 10, None),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn a_join_names_its_listing_whatever_its_length() {
    // Listing names up to 23 bytes are kept inside the attempt, longer ones
    // out of line. Each comes back whole, and each consume or cancel takes
    // the attempt out of its listing's index (found by that name): more
    // attempts than the listing's cap (64) come and go through each one.
    let (_c, s) = store();
    let lease = hosted(&s).id;
    let longest = "l".repeat(128);
    let wide = "é".repeat(12); // 24 bytes
    for listing in ["x", &"a".repeat(23), &"b".repeat(24), &wide, &longest] {
        s.publish(T, lease, listing, b"", None).unwrap();
        for round in 0..40 {
            let t = s.begin_join(T, listing, "c", SEC * 10, None).unwrap();
            s.bind_endpoint(T, t.attempt, &t.token, addr(1)).unwrap();
            let a = s.consume(T, &t.token, None).unwrap();
            assert_eq!(&*a.listing, listing, "round {round}");
            let t = s.begin_join(T, listing, "c", SEC * 10, None).unwrap();
            s.cancel_join(T, t.attempt).unwrap();
        }
        let pending = s.begin_join(T, listing, "c", SEC * 10, None).unwrap();
        s.unpublish(T, listing, None).unwrap();
        assert_eq!(
            s.bind_endpoint(T, pending.attempt, &pending.token, addr(1)),
            Err(Error::NotFound)
        );
    }
    // The consumed ones are remembered as replay memory; none is pending.
    assert_eq!((s.stats().attempts, s.stats().attempts_pending), (200, 0));
}

fn s_version(s: &Store, t: &relaystore::JoinTicket) -> u64 {
    // The version of a fresh attempt is observable through a failed consume.
    match s.consume(T, &t.token, None) {
        Err(Error::Conflict {
            current_version, ..
        }) => current_version,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wrong_or_foreign_token_is_not_found() {
    let (_c, s) = store();
    hosted(&s);
    let t1 = s.begin_join(T, "lobby", "c1", SEC * 10, None).unwrap();
    let t2 = s.begin_join(T, "lobby", "c2", SEC * 10, None).unwrap();
    assert_ne!(t1.token, t2.token);
    let mut forged = t1.token.to_bytes();
    forged[31] ^= 1;
    let forged = relaystore::JoinToken::from_bytes(forged);
    assert_eq!(
        s.bind_endpoint(T, t1.attempt, &forged, addr(1)),
        Err(Error::NotFound)
    );
    assert_eq!(
        s.bind_endpoint(T, t1.attempt, &t2.token, addr(1)),
        Err(Error::NotFound)
    );
    assert_eq!(s.consume(T, &forged, None), Err(Error::NotFound));
    assert!(!format!("{:?}", t1.token).contains(&format!("{:?}", &t1.token.to_bytes()[16..])));
}

#[test]
fn attempts_are_capped_per_listing_and_refusals_leave_nothing() {
    let (_c, s) = store();
    hosted(&s);
    let t1 = s.begin_join(T, "lobby", "c1", SEC * 10, None).unwrap();
    s.begin_join(T, "lobby", "c2", SEC * 10, None).unwrap();
    let before = s.stats();
    assert_eq!(
        (s.begin_join(T, "lobby", "c3", SEC * 10, None)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Parent(Collection::Attempts)))
    );
    assert_eq!(s.stats(), before, "refusal changed nothing");
    // Consuming frees the pending slot, not the replay memory.
    s.bind_endpoint(T, t1.attempt, &t1.token, addr(1)).unwrap();
    s.consume(T, &t1.token, None).unwrap();
    s.begin_join(T, "lobby", "c3", SEC * 10, None).unwrap();
    assert_eq!(s.stats().attempts, 3);
    assert_eq!(s.stats().attempts_pending, 2);
}

#[test]
fn cancel_and_expiry_free_the_attempt() {
    let (c, s) = store();
    hosted(&s);
    let t = s.begin_join(T, "lobby", "c", SEC * 10, None).unwrap();
    s.cancel_join(T, t.attempt).unwrap();
    assert_eq!(s.cancel_join(T, t.attempt), Err(Error::NotFound));
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)),
        Err(Error::NotFound)
    );
    let t = s.begin_join(T, "lobby", "c", SEC * 10, None).unwrap();
    c.advance(SEC * 5);
    s.sweep(); // the driver keeps running, or authorizations fail closed
    c.advance(SEC * 5);
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)),
        Err(Error::Expired)
    );
    s.sweep();
    assert_eq!((s.stats().attempts, s.stats().attempts_pending), (0, 0));
}

#[test]
fn joining_an_invisible_listing_is_not_found() {
    let (_c, s) = store();
    assert_eq!(
        s.begin_join(T, "nope", "c", SEC, None),
        Err(Error::NotFound)
    );
    let g = hosted(&s);
    s.revoke(T, g.id).unwrap();
    assert_eq!(
        s.begin_join(T, "lobby", "c", SEC, None),
        Err(Error::NotFound)
    );
}
