//! Leases: grant, renew, get, revoke, tombstones, endpoints.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::events::Collection;
use relaystore::time::{Clock, ManualClock};
use relaystore::{ConflictReason, Error, Scope, TenantId, TenantQuota};
use std::net::SocketAddr;
use std::time::Duration;

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
    assert_eq!(r.remaining, SEC * 2, "from now, not added to what was left");
    assert_eq!(g.remaining, SEC * 10);
    assert_eq!(g.expires_at, ManualClock::new().wall() + SEC * 10);
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
            reason: ConflictReason::Version,
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
    let (_c, s) = store_with(
        config()
            .leases_max(3)
            .tenant(TenantQuota::default().leases_max(2)),
    );
    s.grant(T, "a", SEC, None).unwrap();
    s.grant(T, "b", SEC, None).unwrap();
    assert_eq!(
        (s.grant(T, "c", SEC, None)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(Collection::Leases)))
    );
    s.grant(OTHER, "a", SEC, None).unwrap();
    assert_eq!(
        (s.grant(OTHER, "b", SEC, None)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Collection(Collection::Leases)))
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

#[test]
fn revoking_an_expired_lease_is_expired_and_leaves_no_tombstone() {
    let (clock, s) = store();
    let g = s.grant(T, "h", SEC, None).unwrap();
    clock.advance(SEC * 2);
    assert_eq!(s.revoke(T, g.id), Err(Error::Expired));
    assert_eq!(s.renew(T, g.id, SEC), Err(Error::Expired));
    assert_eq!(s.stats().tombstones, 0);
    s.sweep();
    assert_eq!(s.revoke(T, g.id), Err(Error::NotFound));
}

#[test]
fn a_tenants_leases_page_through_a_slab_full_of_other_tenants() {
    let (_c, s) = store();
    let scan = relaystore::LEASE_SLOTS_PER_ITEM as usize;
    for _ in 0..scan * 3 {
        s.grant(TenantId(9), "other", SEC * 10, None).unwrap();
    }
    let mine = s.grant(T, "mine", SEC * 10, None).unwrap();
    // One lease per page asked: each page looks at LEASE_SLOTS_PER_ITEM slots.
    let (mut found, mut cursor, mut pages) = (Vec::new(), None, 0);
    loop {
        let page = s.list_leases(T, cursor.as_ref(), 1).unwrap();
        found.extend(page.items.iter().map(|l| l.id));
        pages += 1;
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(found, vec![mine.id]);
    assert_eq!(pages, 4, "{} slots, {scan} a page", scan * 3 + 1);
    assert_eq!(
        s.list_leases(T, Some(&relaystore::Cursor::from("lobby-3")), 1)
            .map(drop),
        Err(Error::InvalidArgument {
            reason: "a lease cursor must be the `next` of an earlier page"
        })
    );
}
