//! Every store operation's happy path and typed errors, on a `ManualClock`.

use relaystore::events::{Cause, Collection, Received, RecordId};
use relaystore::time::{ManualClock, MonoTime};
use relaystore::{Error, Scope, Store, StoreConfig, TenantId, TenantQuota};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
const SEC: Duration = Duration::from_secs(1);

fn config() -> StoreConfig {
    StoreConfig {
        ttl_min: Duration::from_millis(10),
        ttl_max: Duration::from_secs(3600),
        listings_per_lease_max: 3,
        attempts_per_listing_max: 2,
        endpoints_per_lease_max: 2,
        replay_grace: Duration::from_secs(5),
        tombstone_ttl: Duration::from_secs(60),
        idempotency_ttl: Duration::from_secs(30),
        ..StoreConfig::default()
    }
}

fn store_with(config: StoreConfig) -> (Arc<ManualClock>, Store) {
    let clock = Arc::new(ManualClock::new());
    let store = Store::new(config, clock.clone()).expect("valid config");
    (clock, store)
}

fn store() -> (Arc<ManualClock>, Store) {
    store_with(config())
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([203, 0, 113, 7], port))
}

// ----- leases -------------------------------------------------------------

#[test]
fn grants_have_strictly_increasing_fences() {
    let (_c, s) = store();
    let fences: Vec<u64> = (0..20)
        .map(|i| s.grant(TenantId(i % 3), "h", SEC, None).unwrap().fence)
        .collect();
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "{fences:?}");
}

#[test]
fn renew_is_an_absolute_reset_and_refused_after_the_deadline() {
    let (c, s) = store();
    let g = s.grant(T, "host", SEC * 10, None).unwrap();
    c.advance(SEC * 9);
    let r = s.renew(T, g.id, SEC * 2).unwrap();
    assert_eq!(r.deadline, MonoTime::from_millis(11_000));
    assert!(r.version > g.version);
    c.advance(SEC * 2);
    assert_eq!(s.renew(T, g.id, SEC), Err(Error::Expired));
    assert_eq!(s.get_lease(T, g.id), Err(Error::Expired));
    s.sweep();
    assert_eq!(s.renew(T, g.id, SEC), Err(Error::NotFound));
}

#[test]
fn get_lease_reports_holder_fence_version_and_remaining_time() {
    let (c, s) = store();
    let g = s.grant(T, "host-a", SEC * 10, None).unwrap();
    c.advance(SEC * 4);
    let info = s.get_lease(T, g.id).unwrap();
    assert_eq!(
        (
            info.holder.as_ref(),
            info.fence,
            info.version,
            info.remaining
        ),
        ("host-a", g.fence, g.version, SEC * 6)
    );
}

#[test]
fn renew_at_a_stale_version_conflicts() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC, None).unwrap();
    let v2 = s.renew_at(T, g.id, SEC, g.version).unwrap().version;
    assert_eq!(
        s.renew_at(T, g.id, SEC, g.version),
        Err(Error::Conflict {
            current_version: v2
        })
    );
}

#[test]
fn revoked_lease_is_revoked_while_its_tombstone_lives_then_not_found() {
    let (c, s) = store();
    let g = s.grant(T, "h", SEC * 3600, None).unwrap();
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.renew(T, g.id, SEC), Err(Error::Revoked));
    assert_eq!(s.get_lease(T, g.id), Err(Error::Revoked));
    assert_eq!(s.revoke(T, g.id), Ok(()), "revoke is idempotent");
    c.advance(SEC * 60);
    s.sweep();
    assert_eq!(s.renew(T, g.id, SEC), Err(Error::NotFound));
}

#[test]
fn unknown_lease_is_not_found_everywhere() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC, None).unwrap();
    s.revoke(T, g.id).unwrap();
    let (_c2, other_store) = store();
    let missing = other_store.grant(T, "h", SEC, None).unwrap().id;
    // An id from another store instance is a restart, not a missing id.
    assert_eq!(s.renew(T, missing, SEC), Err(Error::Restarted));
    let never = relaystore::LeaseId::from_bits(g.id.to_bits() + 1000);
    assert_eq!(s.renew(T, never, SEC), Err(Error::NotFound));
    assert_eq!(s.get_lease(T, never), Err(Error::NotFound));
    assert_eq!(s.revoke(T, never), Err(Error::NotFound));
}

#[test]
fn grant_validates_its_arguments() {
    let (_c, s) = store();
    assert_eq!(s.grant(T, "", SEC, None), Err(Error::InvalidName));
    assert!(matches!(
        s.grant(T, &"x".repeat(129), SEC, None),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        s.grant(T, "h", Duration::ZERO, None),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        s.grant(T, "h", Duration::from_millis(9), None),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        s.grant(T, "h", SEC * 3601, None),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(s.stats().leases, 0);
}

#[test]
fn tenant_quota_and_store_ceiling_refuse_with_their_scope() {
    let (_c, s) = store_with(StoreConfig {
        leases_max: 3,
        tenant: TenantQuota {
            leases_max: 2,
            ..TenantQuota::default()
        },
        ..config()
    });
    s.grant(T, "a", SEC, None).unwrap();
    s.grant(T, "b", SEC, None).unwrap();
    assert_eq!(
        s.grant(T, "c", SEC, None),
        Err(Error::CapacityExceeded {
            scope: Scope::Tenant(Collection::Leases)
        })
    );
    s.grant(OTHER, "a", SEC, None).unwrap();
    assert_eq!(
        s.grant(OTHER, "b", SEC, None),
        Err(Error::CapacityExceeded {
            scope: Scope::Collection(Collection::Leases)
        })
    );
    assert_eq!(s.stats().leases, 3);
}

#[test]
fn observed_endpoints_are_capped_and_replace_the_least_recently_seen() {
    let (c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    s.observe_endpoint(T, g.id, addr(1)).unwrap();
    c.advance(SEC);
    s.observe_endpoint(T, g.id, addr(2)).unwrap();
    c.advance(SEC);
    s.observe_endpoint(T, g.id, addr(1)).unwrap(); // refreshes 1
    c.advance(SEC);
    s.observe_endpoint(T, g.id, addr(3)).unwrap(); // replaces 2
    let seen: Vec<SocketAddr> = s
        .endpoints(T, g.id)
        .unwrap()
        .iter()
        .map(|e| e.addr)
        .collect();
    assert_eq!(seen, vec![addr(3), addr(1)]);
}

// ----- listings -----------------------------------------------------------

#[test]
fn publish_get_update_unpublish() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    let l = s.publish(T, g.id, "lobby", b"a=1", None).unwrap();
    assert_eq!((l.lease, l.attrs.as_ref()), (g.id, &b"a=1"[..]));
    assert_eq!(s.get_listing(T, "lobby").unwrap(), l);
    let v2 = s.update_listing(T, "lobby", l.version, b"a=2").unwrap();
    assert!(v2 > l.version);
    assert_eq!(
        s.update_listing(T, "lobby", l.version, b"a=3"),
        Err(Error::Conflict {
            current_version: v2
        })
    );
    assert_eq!(s.get_listing(T, "lobby").unwrap().attrs.as_ref(), b"a=2");
    assert_eq!(
        s.unpublish(T, "lobby", Some(l.version)),
        Err(Error::Conflict {
            current_version: v2
        })
    );
    s.unpublish(T, "lobby", Some(v2)).unwrap();
    assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
    assert_eq!(s.unpublish(T, "lobby", None), Err(Error::NotFound));
}

#[test]
fn publishing_a_live_key_conflicts_and_a_freed_key_is_reusable() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    let l = s.publish(T, g.id, "lobby", b"", None).unwrap();
    assert_eq!(
        s.publish(T, g.id, "lobby", b"", None),
        Err(Error::Conflict {
            current_version: l.version
        })
    );
    s.unpublish(T, "lobby", None).unwrap();
    let again = s.publish(T, g.id, "lobby", b"", None).unwrap();
    assert!(again.version > l.version, "versions grow across re-publish");
}

#[test]
fn listing_is_invisible_as_soon_as_its_lease_expires() {
    let (c, s) = store();
    let g = s.grant(T, "h", SEC, None).unwrap();
    s.publish(T, g.id, "lobby", b"", None).unwrap();
    c.advance(SEC);
    assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
    assert!(s.list_listings(T, None, 10).unwrap().items.is_empty());
    assert_eq!(s.publish(T, g.id, "other", b"", None), Err(Error::Expired));
    s.sweep();
    assert_eq!(s.stats().listings, 0, "cascaded with the expired lease");
}

#[test]
fn publish_validates_and_respects_the_per_lease_cap() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    assert_eq!(s.publish(T, g.id, "", b"", None), Err(Error::InvalidName));
    assert!(matches!(
        s.publish(T, g.id, "k", &[0; 1025], None),
        Err(Error::InvalidArgument { .. })
    ));
    for k in ["a", "b", "c"] {
        s.publish(T, g.id, k, b"", None).unwrap();
    }
    assert_eq!(
        s.publish(T, g.id, "d", b"", None),
        Err(Error::CapacityExceeded {
            scope: Scope::Parent(Collection::Listings)
        })
    );
    assert_eq!(
        s.stats().listings,
        3,
        "the refused listing left nothing behind"
    );
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.publish(T, g.id, "e", b"", None), Err(Error::Revoked));
}

#[test]
fn paged_listing_returns_each_stable_listing_exactly_once() {
    let (_c, s) = store_with(StoreConfig {
        listings_per_lease_max: 100,
        ..config()
    });
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    for i in 0..25 {
        s.publish(T, g.id, &format!("k{i:02}"), b"", None).unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = s.list_listings(T, cursor.as_ref(), 7).unwrap();
        pages += 1;
        // Churn between pages: unpublish one ahead, publish new ones.
        if pages == 2 {
            s.unpublish(T, "k20", None).unwrap();
            s.publish(T, g.id, "k07x", b"", None).unwrap(); // behind the cursor
            s.publish(T, g.id, "k99", b"", None).unwrap(); // ahead of it
        }
        seen.extend(page.items.into_iter().map(|l| l.key.to_string()));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let stable: Vec<String> = (0..25)
        .filter(|&i| i != 20)
        .map(|i| format!("k{i:02}"))
        .collect();
    for k in &stable {
        assert_eq!(
            seen.iter().filter(|s| *s == k).count(),
            1,
            "{k} in {seen:?}"
        );
    }
    assert!(!seen.contains(&"k20".to_string()));
    assert!(matches!(
        s.list_listings(T, None, 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(s.list_listings(OTHER, None, 10).unwrap().items.is_empty());
}

// ----- presence -----------------------------------------------------------

#[test]
fn heartbeat_creates_then_refreshes_and_expires() {
    let (c, s) = store();
    let first = s
        .heartbeat(T, "alice", SEC * 5, Some(b"online"), None)
        .unwrap();
    c.advance(SEC * 4);
    let second = s.heartbeat(T, "alice", SEC * 5, None, None).unwrap();
    assert!(second.version > first.version);
    assert_eq!(second.deadline, MonoTime::from_millis(9000));
    let info = s.get_presence(T, "alice").unwrap();
    assert_eq!(info.attrs.as_ref(), b"online", "attrs kept when not given");
    c.advance(SEC * 5);
    assert_eq!(s.get_presence(T, "alice"), Err(Error::Expired));
    s.sweep();
    assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
    assert_eq!(s.stats().presence, 0);
}

#[test]
fn presence_lists_and_leaves() {
    let (_c, s) = store();
    for m in ["c", "a", "b"] {
        s.heartbeat(T, m, SEC, None, None).unwrap();
    }
    let page = s.list_presence(T, None, 10).unwrap();
    let members: Vec<&str> = page.items.iter().map(|p| p.member.as_ref()).collect();
    assert_eq!(members, vec!["a", "b", "c"]);
    s.leave(T, "b").unwrap();
    assert_eq!(s.leave(T, "b"), Err(Error::NotFound));
    assert_eq!(s.list_presence(T, None, 10).unwrap().items.len(), 2);
}

#[test]
fn presence_attached_to_a_lease_dies_with_it() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    s.heartbeat(T, "alice", SEC * 30, None, Some(g.id)).unwrap();
    assert_eq!(s.get_presence(T, "alice").unwrap().lease, Some(g.id));
    let other = s.grant(T, "h2", SEC * 60, None).unwrap();
    assert!(matches!(
        s.heartbeat(T, "alice", SEC * 30, None, Some(other.id)),
        Err(Error::Conflict { .. })
    ));
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
    assert_eq!(s.stats().presence, 0);
    assert_eq!(
        s.heartbeat(T, "bob", SEC, None, Some(g.id)),
        Err(Error::Revoked)
    );
    // The member can come back under a live lease.
    s.heartbeat(T, "alice", SEC * 30, None, Some(other.id))
        .unwrap();
}

// ----- joins --------------------------------------------------------------

fn hosted(s: &Store) -> relaystore::LeaseGrant {
    let g = s.grant(T, "host", SEC * 600, None).unwrap();
    s.publish(T, g.id, "lobby", b"", None).unwrap();
    g
}

#[test]
fn join_bind_consume_and_replay() {
    let (c, s) = store();
    hosted(&s);
    let t = s.begin_join(T, "lobby", "client", SEC * 10, None).unwrap();
    assert_eq!(
        s.consume(T, &t.token),
        Err(Error::Conflict {
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
            current_version: b.version
        })
    );
    let a = s.consume(T, &t.token).unwrap();
    assert_eq!(
        (a.client.as_ref(), a.listing.as_ref(), a.addr),
        ("client", "lobby", addr(1))
    );
    assert_eq!(s.consume(T, &t.token), Err(Error::ReplayRejected));
    assert_eq!(
        s.bind_endpoint(T, t.attempt, &t.token, addr(1)),
        Err(Error::ReplayRejected)
    );
    // Remembered past the attempt's own deadline, until deadline + grace.
    c.advance(SEC * 14);
    s.sweep();
    assert_eq!(s.consume(T, &t.token), Err(Error::ReplayRejected));
    c.advance(SEC);
    s.sweep();
    assert_eq!(s.consume(T, &t.token), Err(Error::NotFound));
    assert_eq!(s.stats().attempts, 0);
}

fn s_version(s: &Store, t: &relaystore::JoinTicket) -> u64 {
    // The version of a fresh attempt is observable through a failed consume.
    match s.consume(T, &t.token) {
        Err(Error::Conflict { current_version }) => current_version,
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
    let forged = relaystore::JoinToken::from_bytes(&forged);
    assert_eq!(
        s.bind_endpoint(T, t1.attempt, &forged, addr(1)),
        Err(Error::NotFound)
    );
    assert_eq!(
        s.bind_endpoint(T, t1.attempt, &t2.token, addr(1)),
        Err(Error::NotFound)
    );
    assert_eq!(s.consume(T, &forged), Err(Error::NotFound));
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
        s.begin_join(T, "lobby", "c3", SEC * 10, None),
        Err(Error::CapacityExceeded {
            scope: Scope::Parent(Collection::Attempts)
        })
    );
    assert_eq!(s.stats(), before, "refusal changed nothing");
    // Consuming frees the pending slot, not the replay memory.
    s.bind_endpoint(T, t1.attempt, &t1.token, addr(1)).unwrap();
    s.consume(T, &t1.token).unwrap();
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

// ----- revocation -----------------------------------------------------------

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
    assert_eq!(s.consume(T, &t.token), Err(Error::NotFound));
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
        .drain()
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
    s.consume(T, &t.token).unwrap();
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.consume(T, &t.token), Err(Error::ReplayRejected));
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

// ----- idempotency ----------------------------------------------------------

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
    let (_c, s) = store_with(StoreConfig {
        tenant: TenantQuota {
            leases_max: 1,
            ..TenantQuota::default()
        },
        ..config()
    });
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

// ----- events ---------------------------------------------------------------

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

// ----- tenant isolation -----------------------------------------------------

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
            format!("{:?}", s.consume(OTHER, &t.token)),
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
    // any other (leases and attempts are keyed by sequence number alone).
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
        s.consume(OTHER, &tk.token).map(drop),
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
