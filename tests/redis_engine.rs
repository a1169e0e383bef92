//! The Redis engine against real servers (standalone and a 3-master
//! Cluster): leases and locks as the in-memory store serves them, and
//! several engine handles (separate connections, as separate relay
//! instances would hold) racing on one Redis.

mod redis;

use redis::{block_on, config, connect_fresh, fresh_namespace, targets, Target};
use relaystore::redis::RedisEngine;
use relaystore::{Error, LeaseId, Scope, StoreConfig, TenantId};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
const MS: Duration = Duration::from_millis(1);

/// `count` engine handles on one fresh store of `target`.
async fn instances(
    target: &Target,
    test: &str,
    count: usize,
    config: StoreConfig,
) -> Vec<RedisEngine> {
    let namespace = fresh_namespace(test);
    let mut engines = Vec::new();
    for _ in 0..count {
        engines.push(
            connect_fresh(target, &namespace, config.clone())
                .await
                .unwrap_or_else(|e| panic!("{}: connect: {e}", target.name)),
        );
    }
    engines
}

/// Runs `check` on every configured server.
fn on_every_target<F, Fut>(test: &str, check: F)
where
    F: Fn(Target, String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for target in targets() {
        let name = format!("{test}-{}", target.name);
        block_on(check(target, name));
    }
}

#[test]
fn leases_grant_renew_get_revoke() {
    on_every_target("leases", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let g = e.grant(T, "host", MS * 10_000, None).await.unwrap();
        assert_eq!(
            g.remaining,
            MS * 10_000,
            "{name}: a grant reports its whole TTL"
        );
        let info = e.get_lease(T, g.id).await.unwrap();
        assert_eq!(
            (info.id, info.holder.as_ref(), info.fence, info.version),
            (g.id, "host", g.fence, g.version)
        );
        assert!(info.remaining <= MS * 10_000 && info.remaining > MS * 9_000);
        let r = e.renew(T, g.id, MS * 20_000).await.unwrap();
        assert!(r.version > g.version, "{name}: a renewal moves the version");
        assert_eq!(r.remaining, MS * 20_000);
        assert_eq!(
            e.renew_at(T, g.id, MS * 20_000, g.version).await,
            Err(Error::Conflict {
                current_version: r.version
            })
        );
        let r2 = e.renew_at(T, g.id, MS * 5_000, r.version).await.unwrap();
        assert!(r2.version > r.version);
        e.revoke(T, g.id).await.unwrap();
        assert_eq!(
            e.revoke(T, g.id).await,
            Ok(()),
            "{name}: revoke is idempotent"
        );
        assert_eq!(e.get_lease(T, g.id).await.map(drop), Err(Error::Revoked));
        assert_eq!(
            e.renew(T, g.id, MS * 100).await.map(drop),
            Err(Error::Revoked)
        );
        // Ids round-trip through text.
        let g2 = e.grant(T, "host", MS * 10_000, None).await.unwrap();
        let parsed: LeaseId = g2.id.to_string().parse().unwrap();
        assert_eq!(e.get_lease(T, parsed).await.unwrap().id, g2.id);
        assert!(g2.fence > g.fence, "{name}: fences rise");
    });
}

#[test]
fn a_lease_is_never_visible_past_its_deadline() {
    on_every_target("expiry", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let short = e.grant(T, "short", MS * 50, None).await.unwrap();
        let long = e.grant(T, "long", MS * 60_000, None).await.unwrap();
        tokio::time::sleep(MS * 80).await;
        // The key still exists in Redis (its memory backstop is later);
        // the server clock in the script decides.
        assert_eq!(
            e.get_lease(T, short.id).await.map(drop),
            Err(Error::Expired),
            "{name}"
        );
        assert_eq!(
            e.renew(T, short.id, MS * 100).await.map(drop),
            Err(Error::Expired)
        );
        assert_eq!(e.revoke(T, short.id).await, Err(Error::Expired));
        assert_eq!(
            e.get_lease(T, long.id).await.unwrap().holder.as_ref(),
            "long"
        );
    });
}

#[test]
fn bad_input_is_refused_before_redis() {
    on_every_target("input", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        assert_eq!(
            e.grant(T, "", MS * 100, None).await.map(drop),
            Err(Error::InvalidName)
        );
        assert!(matches!(
            e.grant(T, "h", Duration::ZERO, None).await,
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            e.grant(T, "h", MS * 5, None).await,
            Err(Error::InvalidArgument { .. })
        ));
        let long = "x".repeat(config().name_bytes_max + 1);
        assert!(matches!(
            e.try_lock(T, &long, "a", MS * 100, None).await,
            Err(Error::InvalidArgument { .. })
        ));
        assert_eq!(
            e.try_lock(T, "__mine", "a", MS * 100, None).await.map(drop),
            Err(Error::ReservedName),
            "{name}"
        );
    });
}

#[test]
fn idempotent_grants_return_the_original() {
    on_every_target("idem", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let first = e.grant(T, "host", MS * 10_000, Some("k1")).await.unwrap();
        let again = e.grant(T, "host", MS * 10_000, Some("k1")).await.unwrap();
        assert_eq!(
            (again.id, again.fence, again.version),
            (first.id, first.fence, first.version),
            "{name}"
        );
        assert_eq!(
            e.grant(T, "other", MS * 10_000, Some("k1")).await.map(drop),
            Err(Error::IdempotencyMismatch)
        );
        let other_tenant = e
            .grant(OTHER, "host", MS * 10_000, Some("k1"))
            .await
            .unwrap();
        assert_ne!(other_tenant.id, first.id, "{name}: keys are per tenant");
    });
}

#[test]
fn tenant_quota_is_exact_under_racing_instances() {
    on_every_target("quota", |target, name| async move {
        let mut limits = config();
        limits.tenant.leases_max = 5;
        let engines = instances(&target, &name, 3, limits).await;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..24 {
            let e = engines[i % 3].clone();
            tasks.spawn(async move { e.grant(T, "h", MS * 60_000, None).await });
        }
        let mut granted = 0;
        while let Some(outcome) = tasks.join_next().await {
            match outcome.unwrap() {
                Ok(_) => granted += 1,
                Err(Error::CapacityExceeded { scope, limit, used }) => {
                    assert_eq!(
                        (scope, limit, used),
                        (Scope::Tenant(relaystore::events::Collection::Leases), 5, 5)
                    );
                }
                Err(e) => panic!("{name}: {e}"),
            }
        }
        assert_eq!(granted, 5, "{name}: N admitted, never N+1");
        // Another tenant is not affected.
        engines[1]
            .grant(OTHER, "h", MS * 60_000, None)
            .await
            .unwrap();
    });
}

#[test]
fn locks_are_exclusive_fenced_and_lapse() {
    on_every_target("locks", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let a = e
            .try_lock(T, "job", "a", MS * 100, None)
            .await
            .unwrap()
            .expect("free");
        assert_eq!((a.holder.as_ref(), a.remaining), ("a", MS * 100));
        assert_eq!(
            e.try_lock(T, "job", "b", MS * 100, None).await,
            Ok(None),
            "{name}: held"
        );
        assert_eq!(e.get_lock(T, "job").await.unwrap().fence, a.fence);
        let r = e.renew_lock(T, "job", a.fence, MS * 50).await.unwrap();
        assert_eq!(r.remaining, MS * 50);
        tokio::time::sleep(MS * 80).await;
        assert_eq!(
            e.get_lock(T, "job").await.map(drop),
            Err(Error::NotFound),
            "{name}: lapsed"
        );
        assert_eq!(
            e.renew_lock(T, "job", a.fence, MS * 50).await.map(drop),
            Err(Error::Expired)
        );
        let b = e
            .try_lock(T, "job", "b", MS * 10_000, None)
            .await
            .unwrap()
            .expect("lapsed");
        assert!(b.fence > a.fence);
        e.release_lock(T, "job", a.fence).await.unwrap();
        assert_eq!(
            e.get_lock(T, "job").await.unwrap().holder.as_ref(),
            "b",
            "{name}: a stale release"
        );
        e.release_lock(T, "job", b.fence).await.unwrap();
        e.release_lock(T, "job", b.fence).await.unwrap();
        assert_eq!(e.get_lock(T, "job").await.map(drop), Err(Error::NotFound));
        assert_eq!(
            e.renew_lock(T, "job", b.fence, MS * 50).await.map(drop),
            Err(Error::NotFound)
        );
        let c = e
            .try_lock(T, "job", "c", MS * 10_000, None)
            .await
            .unwrap()
            .expect("released");
        assert!(c.fence > b.fence, "{name}: retaken with a higher fence");
    });
}

#[test]
fn a_lock_goes_with_its_lease() {
    on_every_target("attached", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        assert!(e
            .try_lock(T, "one", "a", MS * 30_000, Some(g.id))
            .await
            .unwrap()
            .is_some());
        assert!(e
            .try_lock(T, "two", "a", MS * 30_000, Some(g.id))
            .await
            .unwrap()
            .is_some());
        assert_eq!(
            e.try_lock(T, "three", "a", MS * 30_000, Some(g.id))
                .await
                .map(drop),
            Err(Error::CapacityExceeded {
                scope: Scope::Parent(relaystore::events::Collection::Locks),
                limit: 2,
                used: 2
            }),
            "{name}: locks_per_lease_max"
        );
        e.revoke(T, g.id).await.unwrap();
        assert_eq!(
            e.get_lock(T, "one").await.map(drop),
            Err(Error::NotFound),
            "{name}"
        );
        assert!(e
            .try_lock(T, "one", "b", MS * 1_000, None)
            .await
            .unwrap()
            .is_some());
        // A lock on a lease that expired is gone with it.
        let short = e.grant(T, "host", MS * 50, None).await.unwrap();
        e.try_lock(T, "three", "a", MS * 30_000, Some(short.id))
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(MS * 80).await;
        assert_eq!(
            e.get_lock(T, "three").await.map(drop),
            Err(Error::NotFound),
            "{name}"
        );
        assert!(e
            .try_lock(T, "three", "b", MS * 1_000, None)
            .await
            .unwrap()
            .is_some());
        assert_eq!(
            e.try_lock(T, "four", "a", MS * 1_000, Some(short.id))
                .await
                .map(drop),
            Err(Error::Expired),
            "{name}: no lock on an expired lease"
        );
    });
}

#[test]
fn lock_fences_rise_across_racing_instances() {
    on_every_target("fences", |target, name| async move {
        let engines = instances(&target, &name, 3, config()).await;
        let held = Arc::new(AtomicBool::new(false));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, e) in engines.into_iter().enumerate() {
            let (held, order) = (Arc::clone(&held), Arc::clone(&order));
            tasks.spawn(async move {
                let mut wins = 0;
                while wins < 10 {
                    let owner = format!("instance-{i}");
                    if let Some(lock) = e
                        .try_lock(T, "leader", &owner, MS * 10_000, None)
                        .await
                        .unwrap()
                    {
                        assert!(!held.swap(true, Ordering::SeqCst), "two holders at once");
                        order.lock().unwrap().push(lock.fence);
                        held.store(false, Ordering::SeqCst);
                        e.release_lock(T, "leader", lock.fence).await.unwrap();
                        wins += 1;
                    } else {
                        tokio::task::yield_now().await;
                    }
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        let order = order.lock().unwrap();
        assert_eq!(order.len(), 30);
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "{name}: fences in taking order {order:?}"
        );
    });
}

#[test]
fn revoke_on_one_instance_is_seen_on_another_at_once() {
    on_every_target("cascade", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (&engines[0], &engines[1]);
        for round in 0..20 {
            let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
            let lock = format!("job-{round}");
            a.try_lock(T, &lock, "a", MS * 60_000, Some(g.id))
                .await
                .unwrap()
                .unwrap();
            assert!(b.get_lock(T, &lock).await.is_ok());
            b.revoke(T, g.id).await.unwrap();
            assert_eq!(
                a.get_lock(T, &lock).await.map(drop),
                Err(Error::NotFound),
                "{name}"
            );
            assert_eq!(a.get_lease(T, g.id).await.map(drop), Err(Error::Revoked));
        }
    });
}

#[test]
fn another_tenants_ids_look_missing() {
    on_every_target("isolation", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (&engines[0], &engines[1]);
        let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
        let lock = a
            .try_lock(T, "job", "a", MS * 60_000, None)
            .await
            .unwrap()
            .unwrap();
        let missing = LeaseId::from_bits(g.id.to_bits() + 999);
        for e in [a, b] {
            assert_eq!(
                format!("{:?}", e.get_lease(OTHER, g.id).await),
                format!("{:?}", e.get_lease(T, missing).await),
                "{name}"
            );
            assert_eq!(
                format!("{:?}", e.renew(OTHER, g.id, MS * 100).await),
                format!("{:?}", e.renew(T, missing, MS * 100).await)
            );
            assert_eq!(e.revoke(OTHER, g.id).await, e.revoke(T, missing).await);
            assert_eq!(
                e.get_lock(OTHER, "job").await.map(drop),
                Err(Error::NotFound)
            );
            assert_eq!(e.get_lock(T, "nope").await.map(drop), Err(Error::NotFound));
            assert_eq!(e.release_lock(OTHER, "job", lock.fence).await, Ok(()));
        }
        // Nothing the probes did touched the tenant's records.
        assert_eq!(a.get_lock(T, "job").await.unwrap().fence, lock.fence);
        a.get_lease(T, g.id).await.unwrap();
    });
}

#[test]
fn tenants_spread_over_the_cluster_keep_their_rules() {
    on_every_target("spread", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let mut fences = BTreeSet::new();
        for t in 0..32 {
            let g = e
                .grant(TenantId(t), "host", MS * 60_000, None)
                .await
                .unwrap();
            assert!(fences.insert(g.fence), "{name}: a fence issued twice");
            let l = e
                .try_lock(TenantId(t), "job", "a", MS * 60_000, Some(g.id))
                .await
                .unwrap()
                .unwrap();
            e.revoke(TenantId(t), g.id).await.unwrap();
            assert_eq!(
                e.get_lock(TenantId(t), "job").await.map(drop),
                Err(Error::NotFound)
            );
            assert!(l.fence > g.fence);
        }
    });
}
