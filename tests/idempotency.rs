//! Idempotency keys on creating operations and on `consume`.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::{Error, TenantQuota};

#[test]
fn idempotent_grant_returns_the_original_and_rejects_other_parameters() {
    let (c, s) = store();
    let a = s.grant(T, "h", SEC * 10, Some("req-1")).unwrap();
    c.advance(SEC);
    let b = s.grant(T, "h", SEC * 10, Some("req-1")).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        s.grant(T, "other", SEC * 10, Some("req-1")),
        Err(Error::IdempotencyMismatch)
    );
    assert_ne!(
        s.grant(OTHER, "h", SEC * 10, Some("req-1")).unwrap().id,
        a.id,
        "keys are per tenant"
    );
    assert_eq!(s.stats().leases, 2);
    c.advance(SEC * 30);
    s.sweep();
    assert_ne!(
        s.grant(T, "h", SEC * 10, Some("req-1")).unwrap().id,
        a.id,
        "keys expire"
    );
}

#[test]
fn a_failed_idempotent_operation_can_be_retried() {
    let (_c, s) = store_with(config().tenant(TenantQuota::default().leases_max(1)));
    let first = s.grant(T, "h", SEC, None).unwrap();
    assert!(matches!(
        s.grant(T, "h", SEC, Some("k")),
        Err(Error::CapacityExceeded { .. })
    ));
    s.revoke(T, first.id).unwrap();
    let ok = s.grant(T, "h", SEC, Some("k")).unwrap();
    assert_eq!(s.grant(T, "h", SEC, Some("k")).unwrap(), ok);
}

#[test]
fn idempotent_publish_and_join_return_the_same_outcome() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    let l = s.publish(T, g.id, "lobby", b"x", Some("p")).unwrap();
    assert_eq!(s.publish(T, g.id, "lobby", b"x", Some("p")).unwrap(), l);
    assert_eq!(
        s.publish(T, g.id, "lobby", b"y", Some("p")),
        Err(Error::IdempotencyMismatch)
    );
    let t = s.begin_join(T, "lobby", "c", SEC * 10, Some("j")).unwrap();
    assert_eq!(
        s.begin_join(T, "lobby", "c", SEC * 10, Some("j")).unwrap(),
        t
    );
    assert_eq!(s.stats().attempts, 1);
}

#[test]
fn a_consume_under_its_key_is_answered_again_until_the_key_expires() {
    let (c, s) = store();
    let g = s.grant(T, "h", SEC * 600, None).unwrap();
    s.publish(T, g.id, "lobby", b"", None).unwrap();
    let t = s.begin_join(T, "lobby", "c", SEC * 60, None).unwrap();
    s.bind_endpoint(T, t.attempt, &t.token, addr(1)).unwrap();
    let a = s.consume(T, &t.token, Some("admit")).unwrap();
    c.advance(SEC * 29);
    s.sweep();
    assert_eq!(s.consume(T, &t.token, Some("admit")), Ok(a));
    assert_eq!(
        s.consume(T, &t.token, None),
        Err(Error::ReplayRejected),
        "the token is used"
    );
    c.advance(SEC * 2);
    s.sweep();
    assert_eq!(
        s.consume(T, &t.token, Some("admit")),
        Err(Error::ReplayRejected),
        "past idempotency_ttl the key is forgotten; the replay memory is not"
    );
    assert_eq!(
        s.consume(OTHER, &t.token, Some("admit")),
        Err(Error::NotFound),
        "keys are per tenant, and so are tokens"
    );
}

#[test]
fn a_consume_key_counts_under_the_idempotency_quota() {
    let (_c, s) = store_with(config().tenant(TenantQuota::default().idempotency_max(1)));
    let g = s.grant(T, "h", SEC * 600, None).unwrap();
    s.publish(T, g.id, "lobby", b"", None).unwrap();
    let t = s.begin_join(T, "lobby", "c", SEC * 60, None).unwrap();
    let u = s.begin_join(T, "lobby", "d", SEC * 60, None).unwrap();
    for ticket in [&t, &u] {
        s.bind_endpoint(T, ticket.attempt, &ticket.token, addr(1))
            .unwrap();
    }
    s.consume(T, &t.token, Some("k1")).unwrap();
    assert!(
        matches!(
            s.consume(T, &u.token, Some("k2")),
            Err(Error::CapacityExceeded { .. })
        ),
        "a second key over a quota of one"
    );
    s.consume(T, &u.token, None)
        .expect("refused for its key, the consume ran nothing");
}
