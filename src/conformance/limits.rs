//! Bounds and isolation (SPEC §4–§6): bad input is refused with a typed
//! error, every limit refuses with the scope that was full and changes
//! nothing, and another tenant's ids answer exactly as missing ones.

use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::error::{Error, Scope};
use crate::base::ids::{AttemptId, JoinToken, LeaseId, TenantId};
use crate::contract::config::{QuotaPolicy, TenantQuota};
use crate::contract::engine::RelayEngine;
use crate::contract::events::Collection;
use std::net::SocketAddr;
use std::sync::Arc;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

pub(super) async fn bad_input<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let invalid = |r: Result<(), Error>| matches!(r, Err(Error::InvalidArgument { .. }));
    ensure!(
        invalid(
            e.grant(T, "h", std::time::Duration::ZERO, None)
                .await
                .map(drop)
        ),
        "a zero TTL"
    );
    ensure!(
        invalid(e.grant(T, "h", u * 3601, None).await.map(drop)),
        "a TTL over ttl_max"
    );
    ensure_eq!(
        e.grant(T, "", u, None).await.map(drop),
        Err(Error::InvalidName),
        "an empty holder"
    );
    let g = e.grant(T, "h", u * 100, None).await?;
    ensure_eq!(
        e.publish(T, g.id, "", b"", None).await.map(drop),
        Err(Error::InvalidName),
        "an empty key"
    );
    let big = vec![0; 1 << 20];
    ensure!(
        invalid(e.publish(T, g.id, "k", &big, None).await.map(drop)),
        "attrs over attrs_bytes_max"
    );
    ensure_eq!(
        e.try_lock(T, "__internal", "a", u, None).await.map(drop),
        Err(Error::ReservedName),
        "a reserved lock name"
    );
    ensure_eq!(
        e.try_lock(T, "", "a", u, None).await.map(drop),
        Err(Error::InvalidName),
        "an empty lock name"
    );
    ensure!(
        invalid(
            e.try_lock(T, "job", "a", std::time::Duration::ZERO, None)
                .await
                .map(drop)
        ),
        "a zero lock TTL"
    );
    let long = "x".repeat(config(u).name_bytes_max + 1);
    ensure!(
        invalid(e.try_lock(T, &long, "a", u, None).await.map(drop)),
        "a lock name over name_bytes_max"
    );
    ensure!(
        invalid(e.list_listings(T, None, 0).await.map(drop)),
        "a page of no listings"
    );
    ensure!(
        invalid(e.list_presence(T, None, 0).await.map(drop)),
        "a page of no members"
    );
    ensure_eq!(
        e.list_listings(T, None, 10).await?.items.len(),
        0,
        "a refused publish left a listing"
    );
    Ok(())
}

pub(super) async fn tenant_quota<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let mut cfg = config(u);
    cfg.tenant = TenantQuota {
        leases_max: 2,
        ..TenantQuota::default()
    };
    let e = h.engine(cfg).await?;
    let first = e.grant(T, "h", u * 100, None).await?;
    e.grant(T, "h", u * 100, None).await?;
    ensure_eq!(
        e.grant(T, "h", u * 100, None).await.map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Tenant(Collection::Leases),
            limit: 2,
            used: 2,
        }),
        "a tenant over its quota, with the limit and its use"
    );
    e.grant(OTHER, "h", u * 100, None)
        .await
        .map_err(|err| super::Fault::new(format!("a neighbour was refused: {err:?}")))?;
    e.revoke(T, first.id).await?;
    e.grant(T, "h", u * 100, None)
        .await
        .map_err(|err| super::Fault::new(format!("revoke did not free quota: {err:?}")))?;
    Ok(())
}

/// Quotas by tenant: `OTHER` two leases, everyone else one.
struct ByTenant;

impl QuotaPolicy for ByTenant {
    fn quota(&self, tenant: TenantId) -> TenantQuota {
        TenantQuota {
            leases_max: if tenant == OTHER { 2 } else { 1 },
            ..TenantQuota::default()
        }
    }
}

/// The refusal of a lease at `scope`, with its limit and use.
fn full(scope: Scope, limit: u64, used: u64) -> Result<(), Error> {
    Err(Error::CapacityExceeded { scope, limit, used })
}

/// Limits changed at run time: a raised tenant quota admits more, a
/// ceiling lowered below its use evicts nothing and refuses new records, a
/// fixed field is refused whole, and a quota policy gives each tenant its
/// own quota (one lowered below its use refuses, evicting nothing).
pub(super) async fn run_time_limits<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let mut cfg = config(u);
    cfg.leases_max = 10;
    cfg.tenant = TenantQuota {
        leases_max: 1,
        ..TenantQuota::default()
    };
    let e = h.engine(cfg.clone()).await?;
    let first = e.grant(T, "h", u * 100, None).await?;
    let tenant_full = Scope::Tenant(Collection::Leases);
    ensure_eq!(
        e.grant(T, "h", u * 100, None).await.map(drop),
        full(tenant_full, 1, 1),
        "the quota connected with"
    );
    cfg.tenant.leases_max = 3;
    e.reconfigure(cfg.clone()).await?;
    e.grant(T, "h", u * 100, None).await?;
    e.grant(T, "h", u * 100, None).await?;
    ensure_eq!(
        e.grant(T, "h", u * 100, None).await.map(drop),
        full(tenant_full, 3, 3),
        "a raised quota"
    );
    cfg.leases_max = 2;
    e.reconfigure(cfg.clone()).await?;
    ensure_eq!(
        e.grant(OTHER, "h", u * 100, None).await.map(drop),
        full(Scope::Collection(Collection::Leases), 2, 3),
        "a ceiling lowered below its use"
    );
    ensure!(
        e.get_lease(T, first.id).await.is_ok(),
        "a lowered ceiling evicted a lease"
    );
    let mut fixed = cfg.clone();
    fixed.ttl_max = u * 7200;
    fixed.leases_max = 10;
    let refused = e.reconfigure(fixed).await;
    ensure!(
        matches!(
            refused,
            Err(Error::InvalidConfig {
                field: "ttl_max",
                ..
            })
        ),
        "a fixed field changed: {refused:?}"
    );
    ensure_eq!(
        e.grant(OTHER, "h", u * 100, None).await.map(drop),
        full(Scope::Collection(Collection::Leases), 2, 3),
        "a refused reconfiguration changes nothing"
    );
    cfg.leases_max = 10;
    e.reconfigure(cfg).await?;
    e.set_quota_policy(Arc::new(ByTenant)).await;
    e.grant(OTHER, "h", u * 100, None).await?;
    e.grant(OTHER, "h", u * 100, None).await?;
    ensure_eq!(
        e.grant(OTHER, "h", u * 100, None).await.map(drop),
        full(tenant_full, 2, 2),
        "a tenant's own quota from the policy"
    );
    ensure_eq!(
        e.grant(T, "h", u * 100, None).await.map(drop),
        full(tenant_full, 1, 3),
        "a policy's quota below the tenant's use"
    );
    ensure!(
        e.get_lease(T, first.id).await.is_ok(),
        "a lowered quota evicted a lease"
    );
    Ok(())
}

/// `tenants_max` bounds the tenants that hold something: a new tenant
/// past it is refused, and the refusal registers nothing (a second new
/// tenant is refused with the same use); known tenants go on creating;
/// once a tenant holds nothing any more (its leases expired), a new tenant
/// takes its place.
pub(super) async fn tenants_ceiling<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let mut cfg = config(u);
    cfg.tenants_max = 2;
    let e = h.engine(cfg).await?;
    let (third, fourth) = (TenantId(3), TenantId(4));
    e.grant(T, "h", u * 5, None).await?;
    e.grant(OTHER, "h", u * 100, None).await?;
    let full = || full(Scope::Tenants, 2, 2);
    ensure_eq!(
        e.grant(third, "h", u * 100, None).await.map(drop),
        full(),
        "a tenant past tenants_max"
    );
    ensure_eq!(
        e.heartbeat(fourth, "m", u * 100, None, None)
            .await
            .map(drop),
        full(),
        "a refused tenant registers nothing"
    );
    e.grant(T, "h", u * 5, None).await?;
    h.advance(u * 6).await;
    e.grant(third, "h", u * 100, None).await?;
    ensure_eq!(
        e.grant(fourth, "h", u * 100, None).await.map(drop),
        full(),
        "the freed place, taken"
    );
    Ok(())
}

pub(super) async fn holder_quota<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let mut cfg = config(u);
    cfg.tenant = TenantQuota {
        leases_per_holder_max: 2,
        listings_per_holder_max: 3,
        ..TenantQuota::default()
    };
    let e = h.engine(cfg).await?;
    let full = |c, limit, used| {
        Err(Error::CapacityExceeded {
            scope: Scope::Holder(c),
            limit,
            used,
        })
    };
    let first = e.grant(T, "alice", u * 100, Some("first")).await?;
    let second = e.grant(T, "alice", u * 100, None).await?;
    ensure_eq!(
        e.grant(T, "alice", u * 100, None).await.map(drop),
        full(Collection::Leases, 2, 2),
        "a holder over its lease quota, with the limit and its use"
    );
    ensure_eq!(
        e.grant(T, "alice", u * 100, Some("first"))
            .await
            .map(|g| g.id),
        Ok(first.id),
        "a repeated grant at the holder's quota is the first grant"
    );
    e.grant(T, "bob", u * 100, None)
        .await
        .map_err(|err| super::Fault::new(format!("another holder was refused: {err:?}")))?;
    e.grant(OTHER, "alice", u * 100, None)
        .await
        .map_err(|err| super::Fault::new(format!("the holder in another tenant: {err:?}")))?;
    // Listings count per publisher, over all of its leases.
    e.publish(T, first.id, "a-1", b"", None).await?;
    e.publish(T, first.id, "a-2", b"", None).await?;
    e.publish(T, second.id, "a-3", b"", None).await?;
    ensure_eq!(
        e.publish(T, second.id, "a-4", b"", None).await.map(drop),
        full(Collection::Listings, 3, 3),
        "a publisher over its listing quota"
    );
    ensure_eq!(
        e.get_listing(T, "a-4").await.map(drop),
        Err(Error::NotFound),
        "a refused publish left nothing"
    );
    e.unpublish(T, "a-3", None).await?;
    e.publish(T, second.id, "a-4", b"", None).await?;
    // A lease's end gives back its own count and its listings'.
    e.revoke(T, first.id).await?;
    let third = e.grant(T, "alice", u * 100, None).await?;
    e.publish(T, third.id, "a-5", b"", None).await?;
    e.publish(T, third.id, "a-6", b"", None).await?;
    ensure_eq!(
        e.publish(T, third.id, "a-7", b"", None).await.map(drop),
        full(Collection::Listings, 3, 3),
        "the revoked lease's listings were given back, no more"
    );
    let short = e.grant(T, "carol", u * 2, None).await?;
    e.publish(T, short.id, "c-1", b"", None).await?;
    h.advance(u * 3).await;
    e.grant(T, "carol", u * 100, None).await?;
    let c2 = e
        .grant(T, "carol", u * 100, None)
        .await
        .map_err(|err| super::Fault::new(format!("an expired lease still counted: {err:?}")))?;
    e.publish(T, c2.id, "c-2", b"", None).await?;
    // A tenant's revocation takes every count with its records.
    e.revoke_tenant(T).await?;
    for _ in 0..2 {
        let g = e
            .grant(T, "alice", u * 100, None)
            .await
            .map_err(|err| super::Fault::new(format!("after the tenant's revocation: {err:?}")))?;
        e.publish(T, g.id, &format!("r-{}", g.fence), b"", None)
            .await?;
    }
    Ok(())
}

pub(super) async fn ceilings<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let mut cfg = config(u);
    cfg.leases_max = 3;
    let e = h.engine(cfg).await?;
    let g = e.grant(T, "h", u * 100, None).await?;
    e.grant(OTHER, "h", u * 100, None).await?;
    e.grant(TenantId(3), "h", u * 100, None).await?;
    ensure_eq!(
        e.grant(TenantId(4), "h", u * 100, None).await.map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Collection(Collection::Leases),
            limit: 3,
            used: 3,
        }),
        "the store-wide ceiling"
    );
    e.revoke(T, g.id).await?;
    e.grant(TenantId(4), "h", u * 2, None)
        .await
        .map_err(|err| super::Fault::new(format!("revoke did not free room: {err:?}")))?;
    // Expiry frees room too, once the lease is past its deadline and swept.
    h.advance(u * 3).await;
    e.grant(TenantId(5), "h", u * 100, None)
        .await
        .map_err(|err| super::Fault::new(format!("expiry did not free room: {err:?}")))?;
    ensure_eq!(
        e.grant(TenantId(6), "h", u * 100, None).await.map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Collection(Collection::Leases),
            limit: 3,
            used: 3,
        }),
        "the ceiling after expiry"
    );
    Ok(())
}

pub(super) async fn parent_caps<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "h", u * 100, None).await?;
    for i in 0..3 {
        e.publish(T, g.id, &format!("room-{i}"), b"", None).await?;
    }
    ensure_eq!(
        e.publish(T, g.id, "room-3", b"", None).await.map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Parent(Collection::Listings),
            limit: 3,
            used: 3,
        }),
        "listings per lease"
    );
    ensure_eq!(
        e.get_listing(T, "room-3").await.map(drop),
        Err(Error::NotFound),
        "a refused publish left a listing"
    );
    for client in ["a", "b"] {
        e.begin_join(T, "room-0", client, u * 10, None).await?;
    }
    ensure_eq!(
        e.begin_join(T, "room-0", "c", u * 10, None).await.map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Parent(Collection::Attempts),
            limit: 2,
            used: 2,
        }),
        "attempts per listing"
    );
    for name in ["lock-0", "lock-1"] {
        e.try_lock(T, name, "a", u * 10, Some(g.id)).await?;
    }
    ensure_eq!(
        e.try_lock(T, "lock-2", "a", u * 10, Some(g.id))
            .await
            .map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Parent(Collection::Locks),
            limit: 2,
            used: 2,
        }),
        "locks per lease"
    );
    for member in ["m0", "m1"] {
        e.heartbeat(T, member, u * 10, None, Some(g.id)).await?;
    }
    ensure_eq!(
        e.heartbeat(T, "m2", u * 10, None, Some(g.id))
            .await
            .map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Parent(Collection::Presence),
            limit: 2,
            used: 2,
        }),
        "members per lease"
    );
    e.revoke(T, g.id).await?;
    e.publish(
        T,
        e.grant(T, "h", u * 100, None).await?.id,
        "room-0",
        b"",
        None,
    )
    .await
    .map_err(|err| super::Fault::new(format!("revoke did not free the key: {err:?}")))?;
    Ok(())
}

pub(super) async fn isolation<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 100, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    let t = e.begin_join(T, "lobby", "c", u * 10, None).await?;
    e.heartbeat(T, "alice", u * 10, None, None).await?;
    let lock = e.try_lock(T, "job", "a", u * 10, None).await?;
    let fence = lock.map_or(0, |l| l.fence);
    let missing = LeaseId::from_bits(g.id.to_bits() + 999);
    let missing_attempt = AttemptId::from_bits(t.attempt.to_bits() + 999);
    let mut bytes = t.token.to_bytes();
    bytes[..16].copy_from_slice(&missing_attempt.to_bytes());
    let missing_token = JoinToken::from_bytes(bytes);
    let a = SocketAddr::from(([203, 0, 113, 7], 1));
    let probes: Vec<(&str, String, String)> = vec![
        (
            "get_lease",
            format!("{:?}", e.get_lease(OTHER, g.id).await),
            format!("{:?}", e.get_lease(T, missing).await),
        ),
        (
            "renew",
            format!("{:?}", e.renew(OTHER, g.id, u).await),
            format!("{:?}", e.renew(T, missing, u).await),
        ),
        (
            "publish",
            format!("{:?}", e.publish(OTHER, g.id, "x", b"", None).await),
            format!("{:?}", e.publish(T, missing, "x", b"", None).await),
        ),
        (
            "observe_endpoint",
            format!("{:?}", e.observe_endpoint(OTHER, g.id, a).await),
            format!("{:?}", e.observe_endpoint(T, missing, a).await),
        ),
        (
            "get_listing",
            format!("{:?}", e.get_listing(OTHER, "lobby").await),
            format!("{:?}", e.get_listing(T, "nope").await),
        ),
        (
            "begin_join",
            format!("{:?}", e.begin_join(OTHER, "lobby", "c", u, None).await),
            format!("{:?}", e.begin_join(T, "nope", "c", u, None).await),
        ),
        (
            "bind_endpoint",
            format!("{:?}", e.bind_endpoint(OTHER, t.attempt, &t.token, a).await),
            format!(
                "{:?}",
                e.bind_endpoint(T, missing_attempt, &t.token, a).await
            ),
        ),
        (
            "consume",
            format!("{:?}", e.consume(OTHER, &t.token, None).await),
            format!("{:?}", e.consume(T, &missing_token, None).await),
        ),
        (
            "cancel_join",
            format!("{:?}", e.cancel_join(OTHER, t.attempt).await),
            format!("{:?}", e.cancel_join(T, missing_attempt).await),
        ),
        (
            "get_presence",
            format!("{:?}", e.get_presence(OTHER, "alice").await),
            format!("{:?}", e.get_presence(T, "nobody").await),
        ),
        (
            "get_lock",
            format!("{:?}", e.get_lock(OTHER, "job").await),
            format!("{:?}", e.get_lock(T, "nothing").await),
        ),
        (
            "renew_lock",
            format!("{:?}", e.renew_lock(OTHER, "job", fence, u).await),
            format!("{:?}", e.renew_lock(T, "nothing", fence, u).await),
        ),
        (
            "revoke",
            format!("{:?}", e.revoke(OTHER, g.id).await),
            format!("{:?}", e.revoke(T, missing).await),
        ),
    ];
    for (op, foreign, absent) in probes {
        ensure_eq!(foreign, absent, "{op} on another tenant's record");
    }
    // The probes changed nothing.
    ensure_eq!(e.get_lease(T, g.id).await?.id, g.id, "the lease");
    ensure!(e.get_listing(T, "lobby").await.is_ok(), "the listing");
    e.bind_endpoint(T, t.attempt, &t.token, a).await?;
    e.consume(T, &t.token, None).await?;
    Ok(())
}

/// A tenant's usage counts what it holds, as its quotas count it, against
/// the configured limits; another tenant's is its own; a removal gives its
/// unit back.
pub(super) async fn usage<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let quota = TenantQuota::default().leases_max(10).locks_max(OFF_LOCKS);
    let e = h.engine(config(u).tenant(quota.clone())).await?;
    let g1 = e.grant(T, "h", u * 600, Some("req-1")).await?;
    let g2 = e.grant(T, "h", u * 600, None).await?;
    e.publish(T, g1.id, "lobby", b"", None).await?;
    e.heartbeat(T, "m1", u * 600, None, None).await?;
    e.begin_join(T, "lobby", "c", u * 600, None).await?;
    e.try_lock(T, "lk", "o", u * 600, None).await?;
    let expected = [
        (Collection::Leases, Some(2)),
        (Collection::Listings, Some(1)),
        (Collection::Presence, Some(1)),
        (Collection::Attempts, Some(1)),
        (Collection::Replay, Some(1)),
        (Collection::Idempotency, Some(1)),
        // Switched off: no figure.
        (Collection::Locks, None),
        (Collection::Tombstones, None),
    ];
    let mine = e.usage(T).await?;
    let theirs = e.usage(OTHER).await?;
    for (c, used) in expected {
        let want = used.map(|used| crate::contract::usage::Usage {
            used,
            limit: quota.limit(c),
        });
        ensure_eq!(mine.of(c), want, "{c:?}");
        ensure_eq!(
            theirs.of(c).map(|u| u.used),
            used.map(|_| 0),
            "another tenant's {c:?}"
        );
    }
    e.revoke(T, g2.id).await?;
    ensure_eq!(
        e.usage(T).await?.of(Collection::Leases).map(|u| u.used),
        Some(1),
        "a revoked lease given back"
    );
    Ok(())
}

/// A tenant lock quota switched off, for [`usage`].
const OFF_LOCKS: u64 = TenantQuota::OFF;
