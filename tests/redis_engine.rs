//! The Redis engine against real servers (standalone and a 3-master
//! Cluster), on what one handle alone cannot show: several engine handles
//! (separate connections, as separate relay instances hold) racing on one
//! Redis, tenants spread over the cluster's slots, the keys a revocation
//! leaves behind, and a drain that belongs to one handle. What every engine
//! must do is the conformance suite's (`tests/redis_conformance_*.rs` run it
//! on these servers).

mod redis;

use redis::{block_on, config, fresh_namespace, instances, on_every_target, targets, Target};
use relaystore::{Error, LeaseId, Scope, TenantId};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
const MS: Duration = Duration::from_millis(1);

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

fn addr(port: u16) -> std::net::SocketAddr {
    std::net::SocketAddr::from(([203, 0, 113, 7], port))
}

#[test]
fn thirty_two_consumes_across_instances_admit_exactly_one() {
    on_every_target("consumes", |target, name| async move {
        let engines = instances(&target, &name, 4, config()).await;
        let g = engines[0]
            .grant(T, "host", MS * 60_000, None)
            .await
            .unwrap();
        engines[0]
            .publish(T, g.id, "lobby", b"", None)
            .await
            .unwrap();
        for round in 0..5 {
            let t = engines[1]
                .begin_join(T, "lobby", "c", MS * 10_000, None)
                .await
                .unwrap();
            let mut binds = tokio::task::JoinSet::new();
            for port in 1..=8 {
                let (e, t) = (engines[port as usize % 4].clone(), t.clone());
                binds.spawn(
                    async move { e.bind_endpoint(T, t.attempt, &t.token, addr(port)).await },
                );
            }
            let bound = binds
                .join_all()
                .await
                .into_iter()
                .filter(Result::is_ok)
                .count();
            assert_eq!(bound, 1, "{name} round {round}: binds that won");
            let mut consumes = tokio::task::JoinSet::new();
            for i in 0..32 {
                let (e, token) = (engines[i % 4].clone(), t.token);
                consumes.spawn(async move { e.consume(T, &token, None).await });
            }
            let outcomes = consumes.join_all().await;
            let admitted = outcomes.iter().filter(|c| c.is_ok()).count();
            let replays = outcomes
                .iter()
                .filter(|c| **c == Err(Error::ReplayRejected))
                .count();
            assert_eq!(
                (admitted, replays),
                (1, 31),
                "{name} round {round}: {outcomes:?}"
            );
        }
    });
}

#[test]
fn revoking_a_lease_on_one_instance_ends_its_joins_on_another() {
    on_every_target("joincascade", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (&engines[0], &engines[1]);
        for round in 0..10 {
            let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
            let key = format!("lobby-{round}");
            a.publish(T, g.id, &key, b"", None).await.unwrap();
            let pending = a.begin_join(T, &key, "c", MS * 10_000, None).await.unwrap();
            let bound = a.begin_join(T, &key, "d", MS * 10_000, None).await.unwrap();
            a.bind_endpoint(T, bound.attempt, &bound.token, addr(1))
                .await
                .unwrap();
            b.revoke(T, g.id).await.unwrap();
            assert_eq!(
                a.get_listing(T, &key).await.map(drop),
                Err(Error::NotFound),
                "{name}"
            );
            assert_eq!(
                a.bind_endpoint(T, pending.attempt, &pending.token, addr(2))
                    .await
                    .map(drop),
                Err(Error::NotFound)
            );
            assert_eq!(
                a.consume(T, &bound.token, None).await.map(drop),
                Err(Error::NotFound)
            );
            assert_eq!(
                a.begin_join(T, &key, "e", MS * 1_000, None).await.map(drop),
                Err(Error::NotFound)
            );
        }
    });
}

#[test]
fn tenant_quotas_on_listings_and_attempts_do_not_count_the_dead() {
    on_every_target("quotas2", |target, name| async move {
        let mut limits = config();
        limits.tenant.listings_max = 2;
        limits.tenant.attempts_max = 3;
        // No sweep runs during the test: what expired is still stored when
        // the quotas are checked.
        let unswept = Target {
            options: target.options.clone().sweep_interval(MS * 60_000),
            ..target
        };
        let e = instances(&unswept, &name, 1, limits).await.remove(0);
        // Sixteen bare leases that expire first: a creating script's own
        // bounded clean-up (16 per index) spends itself on them. The
        // short lease must outlive the twenty-odd round trips up to the
        // refused publish below, on a loaded machine too: 500 ms.
        for _ in 0..16 {
            e.grant(T, "bare", MS * 400, None).await.unwrap();
        }
        let short = e.grant(T, "host", MS * 500, None).await.unwrap();
        e.publish(T, short.id, "a", b"", None).await.unwrap();
        e.publish(T, short.id, "b", b"", None).await.unwrap();
        e.begin_join(T, "a", "c", MS * 10_000, None).await.unwrap();
        e.begin_join(T, "a", "d", MS * 10_000, None).await.unwrap();
        e.begin_join(T, "b", "c", MS * 10_000, None).await.unwrap();
        let long = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        assert_eq!(
            e.publish(T, long.id, "c", b"", None).await.map(drop),
            Err(Error::CapacityExceeded {
                scope: Scope::Tenant(relaystore::events::Collection::Listings),
                limit: 2,
                used: 2
            }),
            "{name}"
        );
        // Once the short lease has expired, its listings and their attempts
        // no longer count, even before anything swept them.
        tokio::time::sleep(MS * 600).await;
        e.publish(T, long.id, "c", b"", None).await.unwrap();
        e.publish(T, long.id, "d", b"", None).await.unwrap();
        // Two on "c" (its per-listing cap), one on "d": the tenant's three.
        for (key, client) in [("c", "x"), ("c", "y"), ("d", "z")] {
            e.begin_join(T, key, client, MS * 10_000, None)
                .await
                .unwrap();
        }
        assert_eq!(
            e.begin_join(T, "d", "w", MS * 10_000, None).await.map(drop),
            Err(Error::CapacityExceeded {
                scope: Scope::Tenant(relaystore::events::Collection::Attempts),
                limit: 3,
                used: 3
            }),
            "{name}"
        );
    });
}

#[test]
fn revoke_tenant_hides_everything_at_once_and_buries_the_rest() {
    on_every_target("tenantrevoke", |target, name| async move {
        let mut limits = config();
        limits.tenant.leases_max = 3;
        let engines = instances(&target, &name, 2, limits).await;
        let (a, b) = (&engines[0], &engines[1]);
        let mut held = Vec::new();
        for tenant in [T, OTHER] {
            let g = a.grant(tenant, "host", MS * 60_000, None).await.unwrap();
            a.publish(tenant, g.id, "lobby", b"", None).await.unwrap();
            a.heartbeat(tenant, "alice", MS * 60_000, None, None)
                .await
                .unwrap();
            let lock = a
                .try_lock(tenant, "job", "a", MS * 60_000, None)
                .await
                .unwrap()
                .unwrap();
            let t = a
                .begin_join(tenant, "lobby", "c", MS * 60_000, None)
                .await
                .unwrap();
            a.bind_endpoint(tenant, t.attempt, &t.token, addr(1))
                .await
                .unwrap();
            held.push((g, lock, t));
        }
        for _ in 0..2 {
            a.grant(T, "extra", MS * 60_000, None).await.unwrap();
        }
        b.revoke_tenant(T).await.unwrap();
        b.revoke_tenant(T).await.unwrap();
        let (g, lock, t) = &held[0];
        assert_eq!(
            a.get_lease(T, g.id).await.map(drop),
            Err(Error::Revoked),
            "{name}"
        );
        assert_eq!(
            a.renew(T, g.id, MS * 100).await.map(drop),
            Err(Error::Revoked)
        );
        assert_eq!(
            a.get_listing(T, "lobby").await.map(drop),
            Err(Error::NotFound)
        );
        assert_eq!(
            a.get_presence(T, "alice").await.map(drop),
            Err(Error::NotFound)
        );
        assert_eq!(a.get_lock(T, "job").await.map(drop), Err(Error::NotFound));
        assert_eq!(
            a.renew_lock(T, "job", lock.fence, MS * 100).await.map(drop),
            Err(Error::NotFound)
        );
        assert_eq!(
            a.consume(T, &t.token, None).await.map(drop),
            Err(Error::NotFound)
        );
        assert!(a.list_listings(T, None, 10).await.unwrap().items.is_empty());
        // The neighbour is untouched.
        let (g2, lock2, t2) = &held[1];
        a.get_lease(OTHER, g2.id).await.unwrap();
        assert_eq!(a.get_lock(OTHER, "job").await.unwrap().fence, lock2.fence);
        a.consume(OTHER, &t2.token, None).await.unwrap();
        // The tenant starts afresh: its quota counts nothing revoked.
        for _ in 0..3 {
            a.grant(T, "host", MS * 60_000, None).await.unwrap();
        }
        assert!(matches!(
            a.grant(T, "host", MS * 60_000, None).await,
            Err(Error::CapacityExceeded { .. })
        ));
        assert!(a
            .try_lock(T, "job", "b", MS * 60_000, None)
            .await
            .unwrap()
            .is_some());
        b.revoke_tenant(TenantId(77)).await.unwrap();
    });
}

#[test]
fn a_revoked_tenants_old_keys_are_buried() {
    let target = targets()
        .into_iter()
        .find(|t| t.name == "standalone")
        .expect("targets() has the standalone server");
    block_on(async move {
        let namespace = fresh_namespace("burial");
        let e = redis::connect_fresh(&target, &namespace, config())
            .await
            .unwrap();
        let url = std::env::var("REDIS_URL").unwrap();
        let mut raw = ::redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let old = format!("{{{namespace}:1}}:{:016x}:0:*", e.incarnation());
        let count = |pattern: String| {
            let mut raw = raw.clone();
            async move {
                let keys: Vec<String> = ::redis::cmd("KEYS")
                    .arg(pattern)
                    .query_async(&mut raw)
                    .await
                    .unwrap();
                keys.len()
            }
        };
        for i in 0..40 {
            let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
            e.publish(T, g.id, &format!("lobby-{i}"), b"", None)
                .await
                .unwrap();
            e.heartbeat(T, &format!("m-{i}"), MS * 60_000, None, Some(g.id))
                .await
                .unwrap();
            e.observe_endpoint(T, g.id, addr(1)).await.unwrap();
            e.begin_join(T, &format!("lobby-{i}"), "c", MS * 60_000, None)
                .await
                .unwrap();
        }
        assert!(count(old.clone()).await > 200);
        e.revoke_tenant(T).await.unwrap();
        // Each creation buries up to 16 records of the old epoch.
        for _ in 0..30 {
            e.grant(T, "host", MS * 60_000, None).await.unwrap();
        }
        assert_eq!(count(old).await, 0, "keys of the revoked epoch are left");
        let graves: usize = ::redis::cmd("LLEN")
            .arg(format!("{{{namespace}:1}}:{:016x}:graves", e.incarnation()))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(graves, 0);
    });
}

#[test]
fn a_drain_stops_one_instance_and_leaves_the_shared_state_to_the_others() {
    on_every_target("drain", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (draining, other) = (&engines[0], &engines[1]);
        let g = draining.grant(T, "host", MS * 60_000, None).await.unwrap();
        draining
            .heartbeat(T, "alice", MS * 60_000, None, Some(g.id))
            .await
            .unwrap();
        let left = draining.begin_drain(MS * 300).await.unwrap();
        assert!(left <= MS * 300 && left > MS * 200, "{name}: {left:?}");
        // A second call keeps the first deadline.
        assert!(draining.begin_drain(MS * 5_000).await.unwrap() <= left);
        // New records are refused; existing ones keep working.
        assert_eq!(
            draining.grant(T, "h", MS * 1_000, None).await.map(drop),
            Err(Error::Draining),
            "{name}"
        );
        assert_eq!(
            draining
                .heartbeat(T, "bob", MS * 1_000, None, None)
                .await
                .map(drop),
            Err(Error::Draining),
            "{name}: a new presence record"
        );
        assert!(draining.get_presence(T, "bob").await.is_err());
        draining
            .heartbeat(T, "alice", MS * 60_000, None, Some(g.id))
            .await
            .unwrap_or_else(|e| panic!("{name}: refreshing a record while draining: {e}"));
        draining.renew(T, g.id, MS * 60_000).await.unwrap();
        // The other instance is not draining.
        assert_eq!(other.health().await, relaystore::Health::Ready);
        other.grant(T, "h", MS * 1_000, None).await.unwrap();
        tokio::time::sleep(MS * 350).await;
        assert_eq!(draining.health().await, relaystore::Health::Stopped);
        assert_eq!(
            draining.get_lease(T, g.id).await.map(drop),
            Err(Error::STOPPED),
            "{name}: a stopped handle serves nothing"
        );
        // Nothing was revoked: the lease and its presence live on.
        assert_eq!(
            other.get_lease(T, g.id).await.unwrap().holder.as_ref(),
            "host"
        );
        assert!(other.get_presence(T, "alice").await.is_ok());
    });
}
