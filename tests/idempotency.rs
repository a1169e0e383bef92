//! Idempotency keys on creating operations.
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
