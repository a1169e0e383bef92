//! Revocation of a lease, a listing and a tenant: cascades and visibility.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::events::{Cause, Collection, Received};
use relaystore::{Error, TenantId};

#[test]
fn revoking_a_lease_cascades_to_everything_attached_at_once() {
    let (_c, s) = store();
    let events = s.subscribe().unwrap();
    let g = hosted(&s);
    let t = s.begin_join(T, "lobby", "c", SEC * 10, None).unwrap();
    s.bind_endpoint(T, t.attempt, &t.token, addr(1)).unwrap();
    s.heartbeat(T, "alice", SEC * 10, None, Some(g.id)).unwrap();
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
    assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
    assert_eq!(s.consume(T, &t.token, None), Err(Error::NotFound));
    let st = s.stats();
    assert_eq!(
        (
            st.leases,
            st.listings,
            st.presence,
            st.attempts,
            st.attempts_pending
        ),
        (0, 0, 0, 0, 0)
    );
    let got: Vec<(Collection, Cause)> = events
        .try_recv_all()
        .into_iter()
        .map(|r| match r {
            Received::Event(e) => (e.collection, e.cause),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Collection::Leases, Cause::Revoked),
            (Collection::Listings, Cause::Cascaded),
            (Collection::Attempts, Cause::Cascaded),
            (Collection::Presence, Cause::Cascaded),
        ]
    );
}

#[test]
fn a_consumed_token_stays_rejected_after_its_lease_is_revoked() {
    let (_c, s) = store();
    let g = hosted(&s);
    let t = s.begin_join(T, "lobby", "c", SEC * 10, None).unwrap();
    s.bind_endpoint(T, t.attempt, &t.token, addr(1)).unwrap();
    s.consume(T, &t.token, None).unwrap();
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.consume(T, &t.token, None), Err(Error::ReplayRejected));
}

#[test]
fn revoking_a_listing_cascades_to_its_attempts_and_is_idempotent() {
    let (_c, s) = store();
    hosted(&s);
    let t = s.begin_join(T, "lobby", "c", SEC * 10, None).unwrap();
    s.revoke_listing(T, "lobby").unwrap();
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)),
        Err(Error::NotFound)
    );
    assert_eq!(s.revoke_listing(T, "lobby"), Ok(()));
    assert_eq!(s.stats().attempts, 0);
}

#[test]
fn revoking_a_tenant_hides_everything_at_once_and_frees_it() {
    let (_c, s) = store();
    let g = hosted(&s);
    let t = s.begin_join(T, "lobby", "c", SEC * 10, None).unwrap();
    s.heartbeat(T, "alice", SEC * 10, None, None).unwrap();
    let o = s.grant(OTHER, "h", SEC * 10, None).unwrap();
    s.revoke_tenant(T).unwrap();
    assert_eq!(s.get_lease(T, g.id), Err(Error::Revoked));
    assert_eq!(s.renew(T, g.id, SEC), Err(Error::Revoked));
    assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
    assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)),
        Err(Error::NotFound)
    );
    let st = s.stats();
    assert_eq!(
        (st.leases, st.listings, st.presence, st.attempts),
        (1, 0, 0, 0)
    );
    s.get_lease(OTHER, o.id).unwrap();
    // The tenant can start over.
    let g2 = s.grant(T, "host", SEC * 10, None).unwrap();
    s.publish(T, g2.id, "lobby", b"", None).unwrap();
    s.revoke_tenant(TenantId(99)).unwrap();
}
