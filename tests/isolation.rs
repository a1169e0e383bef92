//! Tenant isolation: another tenant's id answers exactly as a missing one.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::Error;

#[test]
fn a_cross_tenant_probe_is_indistinguishable_from_a_missing_id() {
    let (c, s) = store();
    let g = hosted(&s);
    let t = s.begin_join(T, "lobby", "c", SEC * 10, None).unwrap();
    s.heartbeat(T, "alice", SEC * 10, None, None).unwrap();
    let missing_lease = relaystore::LeaseId::from_bits(g.id.to_bits() + 999);
    let missing_attempt = relaystore::AttemptId::from_bits(t.attempt.to_bits() + 999);
    let pairs: Vec<(String, String)> = vec![
        (
            format!("{:?}", s.get_lease(OTHER, g.id)),
            format!("{:?}", s.get_lease(T, missing_lease)),
        ),
        (
            format!("{:?}", s.renew(OTHER, g.id, SEC)),
            format!("{:?}", s.renew(T, missing_lease, SEC)),
        ),
        (
            format!("{:?}", s.revoke(OTHER, g.id)),
            format!("{:?}", s.revoke(T, missing_lease)),
        ),
        (
            format!("{:?}", s.observe_endpoint(OTHER, g.id, addr(1))),
            format!("{:?}", s.observe_endpoint(T, missing_lease, addr(1))),
        ),
        (
            format!("{:?}", s.publish(OTHER, g.id, "x", b"", None)),
            format!("{:?}", s.publish(T, missing_lease, "x", b"", None)),
        ),
        (
            format!("{:?}", s.get_listing(OTHER, "lobby")),
            format!("{:?}", s.get_listing(T, "nope")),
        ),
        (
            format!("{:?}", s.update_listing(OTHER, "lobby", 1, b"")),
            format!("{:?}", s.update_listing(T, "nope", 1, b"")),
        ),
        (
            format!("{:?}", s.unpublish(OTHER, "lobby", None)),
            format!("{:?}", s.unpublish(T, "nope", None)),
        ),
        (
            format!("{:?}", s.begin_join(OTHER, "lobby", "c", SEC, None)),
            format!("{:?}", s.begin_join(T, "nope", "c", SEC, None)),
        ),
        (
            format!("{:?}", s.bind_endpoint(OTHER, t.attempt, &t.token, addr(1))),
            format!(
                "{:?}",
                s.bind_endpoint(T, missing_attempt, &t.token, addr(1))
            ),
        ),
        (
            format!("{:?}", s.consume(OTHER, &t.token, None)),
            format!("{:?}", s.cancel_join(T, missing_attempt)),
        ),
        (
            format!("{:?}", s.cancel_join(OTHER, t.attempt)),
            format!("{:?}", s.cancel_join(T, missing_attempt)),
        ),
        (
            format!("{:?}", s.get_presence(OTHER, "alice")),
            format!("{:?}", s.get_presence(T, "nobody")),
        ),
        (
            format!("{:?}", s.leave(OTHER, "alice")),
            format!("{:?}", s.leave(T, "nobody")),
        ),
        (
            format!("{:?}", s.endpoints(OTHER, g.id)),
            format!("{:?}", s.endpoints(T, missing_lease)),
        ),
        (
            format!("{:?}", s.renew_at(OTHER, g.id, SEC, g.version)),
            format!("{:?}", s.renew_at(T, missing_lease, SEC, g.version)),
        ),
        (
            format!("{:?}", s.heartbeat(OTHER, "bob", SEC, None, Some(g.id))),
            format!(
                "{:?}",
                s.heartbeat(T, "bob", SEC, None, Some(missing_lease))
            ),
        ),
        (
            format!(
                "{:?}",
                s.try_lock(OTHER, "l", "o", SEC, Some(g.id)).map(|_| ())
            ),
            format!(
                "{:?}",
                s.try_lock(T, "l", "o", SEC, Some(missing_lease))
                    .map(|_| ())
            ),
        ),
    ];
    for (probe, missing) in pairs {
        assert_eq!(probe, missing);
        assert_eq!(probe, "Err(NotFound)");
    }
    // A revoked lease answers Revoked to its own tenant only.
    let gone = s.grant(T, "h", SEC * 10, None).unwrap();
    s.revoke(T, gone.id).unwrap();
    assert_eq!(s.get_lease(T, gone.id), Err(Error::Revoked));
    assert_eq!(s.get_lease(OTHER, gone.id), Err(Error::NotFound));
    assert_eq!(s.renew(OTHER, gone.id, SEC), Err(Error::NotFound));
    assert_eq!(s.revoke(OTHER, gone.id), Err(Error::NotFound));
    // Expired but not yet swept: `Expired` to its tenant, `NotFound` to
    // any other (leases and attempts are keyed by their id alone).
    let brief = s.grant(T, "h", SEC, None).unwrap();
    let tk = s.begin_join(T, "lobby", "c2", SEC, None).unwrap();
    c.advance(SEC);
    assert_eq!(s.get_lease(T, brief.id), Err(Error::Expired));
    let probes = [
        s.get_lease(OTHER, brief.id).map(drop),
        s.renew(OTHER, brief.id, SEC).map(drop),
        s.revoke(OTHER, brief.id),
        s.observe_endpoint(OTHER, brief.id, addr(1)),
        s.endpoints(OTHER, brief.id).map(drop),
        s.cancel_join(OTHER, tk.attempt),
        s.bind_endpoint(OTHER, tk.attempt, &tk.token, addr(1))
            .map(drop),
        s.consume(OTHER, &tk.token, None).map(drop),
    ];
    for probe in probes {
        assert_eq!(probe, Err(Error::NotFound));
    }
    assert_eq!(Error::NotFound.to_string(), "not found");
    // And the probes changed nothing for the owner.
    s.bind_endpoint(T, t.attempt, &t.token, addr(1)).unwrap();
    s.get_presence(T, "alice").unwrap();
}

#[test]
fn reclaiming_a_key_from_an_expired_unswept_lease_keeps_its_index_exact() {
    // Found by the simulation (seed 6): detaching a child from a parent
    // whose deadline had passed, but which was not yet swept, left a stale
    // entry in the parent's index.
    let (c, s) = store();
    let old = s.grant(T, "h", SEC, None).unwrap();
    s.publish(T, old.id, "lobby", b"", None).unwrap();
    c.advance(SEC); // `old` expired, not swept
    let new = s.grant(T, "h", SEC * 60, None).unwrap();
    s.publish(T, new.id, "lobby", b"", None).unwrap(); // reclaims the key
    s.audit().unwrap();
    s.sweep();
    s.audit().unwrap();
    assert_eq!(s.get_listing(T, "lobby").unwrap().lease, new.id);
}
