//! The Redis engine against real servers (standalone and a 3-master
//! Cluster): leases and locks as the in-memory store serves them, and
//! several engine handles (separate connections, as separate relay
//! instances would hold) racing on one Redis.

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
        // Long enough to outlive the attach on a loaded machine.
        let short = e.grant(T, "host", MS * 250, None).await.unwrap();
        e.try_lock(T, "three", "a", MS * 30_000, Some(short.id))
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(MS * 300).await;
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

fn addr(port: u16) -> std::net::SocketAddr {
    std::net::SocketAddr::from(([203, 0, 113, 7], port))
}

#[test]
fn listings_publish_update_page_unpublish() {
    on_every_target("listings", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        let l = e
            .publish(T, g.id, "lobby-b", b"mode=ffa", None)
            .await
            .unwrap();
        assert_eq!(e.get_listing(T, "lobby-b").await.unwrap(), l, "{name}");
        assert_eq!(
            e.publish(T, g.id, "lobby-b", b"", None).await.map(drop),
            Err(Error::Conflict {
                current_version: l.version
            })
        );
        let v = e
            .update_listing(T, "lobby-b", l.version, b"mode=tdm")
            .await
            .unwrap();
        assert!(v > l.version);
        assert_eq!(
            e.update_listing(T, "lobby-b", l.version, b"x").await,
            Err(Error::Conflict { current_version: v })
        );
        assert_eq!(
            &*e.get_listing(T, "lobby-b").await.unwrap().attrs,
            b"mode=tdm"
        );
        e.publish(T, g.id, "lobby-a", b"", None).await.unwrap();
        e.publish(T, g.id, "lobby-c", b"", None).await.unwrap();
        assert_eq!(
            e.publish(T, g.id, "lobby-d", b"", None).await.map(drop),
            Err(Error::CapacityExceeded {
                scope: Scope::Parent(relaystore::events::Collection::Listings),
                limit: 3,
                used: 3
            }),
            "{name}: listings_per_lease_max"
        );
        let first = e.list_listings(T, None, 2).await.unwrap();
        let keys: Vec<_> = first.items.iter().map(|l| l.key.to_string()).collect();
        assert_eq!(keys, ["lobby-a", "lobby-b"]);
        let rest = e.list_listings(T, first.next.as_ref(), 2).await.unwrap();
        let keys: Vec<_> = rest.items.iter().map(|l| l.key.to_string()).collect();
        assert_eq!((keys, rest.next), (vec!["lobby-c".to_owned()], None));
        assert!(matches!(
            e.list_listings(T, None, 0).await,
            Err(Error::InvalidArgument { .. })
        ));
        assert_eq!(
            e.unpublish(T, "lobby-a", Some(1)).await,
            Err(Error::Conflict {
                current_version: e.get_listing(T, "lobby-a").await.unwrap().version
            })
        );
        e.unpublish(T, "lobby-a", None).await.unwrap();
        assert_eq!(e.unpublish(T, "lobby-a", None).await, Err(Error::NotFound));
        assert_eq!(
            e.revoke_listing(T, "lobby-a").await,
            Ok(()),
            "{name}: revoke is idempotent"
        );
        // Visible only under a live lease; the key is free once it is gone.
        e.revoke(T, g.id).await.unwrap();
        assert_eq!(
            e.get_listing(T, "lobby-b").await.map(drop),
            Err(Error::NotFound)
        );
        assert!(e.list_listings(T, None, 10).await.unwrap().items.is_empty());
        // Long enough to outlive the publish on a loaded machine.
        let g2 = e.grant(T, "host2", MS * 250, None).await.unwrap();
        e.publish(T, g2.id, "lobby-b", b"", None).await.unwrap();
        tokio::time::sleep(MS * 300).await;
        assert_eq!(
            e.get_listing(T, "lobby-b").await.map(drop),
            Err(Error::NotFound),
            "{name}: expired lease"
        );
        let g3 = e.grant(T, "host3", MS * 60_000, None).await.unwrap();
        e.publish(T, g3.id, "lobby-b", b"", None).await.unwrap();
        assert_eq!(
            e.publish(T, g.id, "x", b"", None).await.map(drop),
            Err(Error::Revoked)
        );
    });
}

#[test]
fn joins_bind_once_and_consume_exactly_once() {
    on_every_target("joins", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        let l = e.publish(T, g.id, "lobby", b"", None).await.unwrap();
        assert_eq!(
            e.begin_join(T, "nope", "c", MS * 1_000, None)
                .await
                .map(drop),
            Err(Error::NotFound)
        );
        let t = e
            .begin_join(T, "lobby", "client", MS * 100, None)
            .await
            .unwrap();
        // An update is the same listing: its attempts stay.
        e.update_listing(T, "lobby", l.version, b"full=0")
            .await
            .unwrap();
        assert_eq!(
            (t.remaining, t.token.attempt()),
            (MS * 100, t.attempt),
            "{name}"
        );
        assert!(
            matches!(e.consume(T, &t.token).await, Err(Error::Conflict { .. })),
            "unbound"
        );
        let mut forged = t.token.to_bytes();
        forged[31] ^= 1;
        let forged = relaystore::JoinToken::from_bytes(&forged);
        assert_eq!(
            e.bind_endpoint(T, t.attempt, &forged, addr(1))
                .await
                .map(drop),
            Err(Error::NotFound)
        );
        let b = e
            .bind_endpoint(T, t.attempt, &t.token, addr(1))
            .await
            .unwrap();
        assert_eq!(
            e.bind_endpoint(T, t.attempt, &t.token, addr(1)).await,
            Ok(b),
            "the winning bind repeats"
        );
        assert_eq!(
            e.bind_endpoint(T, t.attempt, &t.token, addr(2)).await,
            Err(Error::Conflict {
                current_version: b.version
            })
        );
        assert_eq!(e.consume(T, &forged).await.map(drop), Err(Error::NotFound));
        let a = e.consume(T, &t.token).await.unwrap();
        assert_eq!(
            (a.attempt, a.client.as_ref(), a.listing.as_ref(), a.addr),
            (t.attempt, "client", "lobby", addr(1))
        );
        assert_eq!(
            e.consume(T, &t.token).await.map(drop),
            Err(Error::ReplayRejected)
        );
        assert_eq!(
            e.cancel_join(T, t.attempt).await,
            Err(Error::ReplayRejected)
        );
        // Remembered past the attempt's deadline, for the replay grace.
        tokio::time::sleep(MS * 150).await;
        assert_eq!(
            e.consume(T, &t.token).await.map(drop),
            Err(Error::ReplayRejected),
            "{name}"
        );
        // The per-listing cap counts pending attempts only.
        let t1 = e
            .begin_join(T, "lobby", "c1", MS * 10_000, None)
            .await
            .unwrap();
        let _t2 = e
            .begin_join(T, "lobby", "c2", MS * 10_000, None)
            .await
            .unwrap();
        assert_eq!(
            e.begin_join(T, "lobby", "c3", MS * 10_000, None)
                .await
                .map(drop),
            Err(Error::CapacityExceeded {
                scope: Scope::Parent(relaystore::events::Collection::Attempts),
                limit: 2,
                used: 2
            })
        );
        e.cancel_join(T, t1.attempt).await.unwrap();
        assert_eq!(
            e.cancel_join(T, t1.attempt).await,
            Err(Error::NotFound),
            "cancel twice"
        );
        assert_eq!(
            e.bind_endpoint(T, t1.attempt, &t1.token, addr(1))
                .await
                .map(drop),
            Err(Error::NotFound)
        );
        e.begin_join(T, "lobby", "c3", MS * 10_000, None)
            .await
            .unwrap();
        // Idempotent creation returns the original ticket.
        let g2 = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        let p = e
            .publish(T, g2.id, "other", b"a", Some("pub-1"))
            .await
            .unwrap();
        assert_eq!(
            e.publish(T, g2.id, "other", b"a", Some("pub-1"))
                .await
                .unwrap(),
            p
        );
        assert_eq!(
            e.publish(T, g2.id, "other", b"b", Some("pub-1"))
                .await
                .map(drop),
            Err(Error::IdempotencyMismatch)
        );
        let j = e
            .begin_join(T, "other", "c", MS * 10_000, Some("join-1"))
            .await
            .unwrap();
        let j2 = e
            .begin_join(T, "other", "c", MS * 10_000, Some("join-1"))
            .await
            .unwrap();
        assert_eq!(
            (j2.attempt, j2.token.to_bytes()),
            (j.attempt, j.token.to_bytes()),
            "{name}"
        );
        let late = e.begin_join(T, "other", "c", MS * 50, None).await.unwrap();
        tokio::time::sleep(MS * 80).await;
        assert!(matches!(
            e.bind_endpoint(T, late.attempt, &late.token, addr(1)).await,
            Err(Error::Expired | Error::NotFound)
        ));
    });
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
                consumes.spawn(async move { e.consume(T, &token).await });
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
                a.consume(T, &bound.token).await.map(drop),
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
fn presence_heartbeats_pages_and_cascades() {
    on_every_target("presence", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let first = e
            .heartbeat(T, "bob", MS * 10_000, Some(b"v1"), None)
            .await
            .unwrap();
        assert_eq!(first.remaining, MS * 10_000, "{name}");
        let again = e
            .heartbeat(T, "bob", MS * 20_000, None, None)
            .await
            .unwrap();
        assert!(again.version > first.version);
        let bob = e.get_presence(T, "bob").await.unwrap();
        assert_eq!(
            (bob.member.as_ref(), &*bob.attrs, bob.lease),
            ("bob", &b"v1"[..], None)
        );
        assert!(bob.remaining > MS * 10_000);
        e.heartbeat(T, "alice", MS * 10_000, None, None)
            .await
            .unwrap();
        e.heartbeat(T, "carol", MS * 10_000, None, None)
            .await
            .unwrap();
        let page = e.list_presence(T, None, 2).await.unwrap();
        let names: Vec<_> = page.items.iter().map(|p| p.member.to_string()).collect();
        assert_eq!(names, ["alice", "bob"]);
        let rest = e.list_presence(T, page.next.as_ref(), 2).await.unwrap();
        assert_eq!(rest.items.len(), 1);
        assert_eq!(rest.items[0].member.as_ref(), "carol");
        e.leave(T, "carol").await.unwrap();
        assert_eq!(e.leave(T, "carol").await, Err(Error::NotFound));
        // Attached to a lease: another lease may not take the member, a
        // per-lease cap holds, and the records go with the lease.
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        let g2 = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        e.heartbeat(T, "m1", MS * 10_000, None, Some(g.id))
            .await
            .unwrap();
        e.heartbeat(T, "m2", MS * 10_000, None, Some(g.id))
            .await
            .unwrap();
        assert_eq!(
            e.heartbeat(T, "m3", MS * 10_000, None, Some(g.id))
                .await
                .map(drop),
            Err(Error::CapacityExceeded {
                scope: Scope::Parent(relaystore::events::Collection::Presence),
                limit: 2,
                used: 2
            })
        );
        assert!(matches!(
            e.heartbeat(T, "m1", MS * 10_000, None, Some(g2.id)).await,
            Err(Error::Conflict { .. })
        ));
        assert_eq!(e.get_presence(T, "m1").await.unwrap().lease, Some(g.id));
        e.revoke(T, g.id).await.unwrap();
        assert_eq!(
            e.get_presence(T, "m1").await.map(drop),
            Err(Error::NotFound),
            "{name}"
        );
        e.heartbeat(T, "m1", MS * 10_000, None, Some(g2.id))
            .await
            .unwrap();
        // A record is never visible past its deadline.
        e.heartbeat(T, "brief", MS * 50, None, None).await.unwrap();
        tokio::time::sleep(MS * 80).await;
        assert_eq!(
            e.get_presence(T, "brief").await.map(drop),
            Err(Error::NotFound),
            "{name}"
        );
        let all = e.list_presence(T, None, 10).await.unwrap();
        assert!(all.items.iter().all(|p| p.member.as_ref() != "brief"));
    });
}

#[test]
fn endpoints_most_recent_first_within_the_cap() {
    on_every_target("endpoints", |target, name| async move {
        let e = instances(&target, &name, 1, config()).await.remove(0);
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        e.observe_endpoint(T, g.id, addr(1)).await.unwrap();
        tokio::time::sleep(MS * 5).await;
        e.observe_endpoint(T, g.id, addr(2)).await.unwrap();
        let seen = e.endpoints(T, g.id).await.unwrap();
        assert_eq!(
            seen.iter().map(|s| s.addr).collect::<Vec<_>>(),
            vec![addr(2), addr(1)],
            "{name}"
        );
        assert!(seen[0].age <= seen[1].age);
        tokio::time::sleep(MS * 5).await;
        e.observe_endpoint(T, g.id, addr(3)).await.unwrap();
        let seen = e.endpoints(T, g.id).await.unwrap();
        assert_eq!(
            seen.iter().map(|s| s.addr).collect::<Vec<_>>(),
            vec![addr(3), addr(2)],
            "{name}: the cap replaces the least recently seen"
        );
        // Seeing one again makes it the most recent.
        tokio::time::sleep(MS * 5).await;
        e.observe_endpoint(T, g.id, addr(2)).await.unwrap();
        assert_eq!(e.endpoints(T, g.id).await.unwrap()[0].addr, addr(2));
        e.revoke(T, g.id).await.unwrap();
        assert_eq!(e.endpoints(T, g.id).await.map(drop), Err(Error::Revoked));
        assert_eq!(
            e.observe_endpoint(T, g.id, addr(4)).await,
            Err(Error::Revoked)
        );
        let missing = LeaseId::from_bits(g.id.to_bits() + 999);
        assert_eq!(
            e.endpoints(T, missing).await.map(drop),
            Err(Error::NotFound)
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
        assert_eq!(a.consume(T, &t.token).await.map(drop), Err(Error::NotFound));
        assert!(a.list_listings(T, None, 10).await.unwrap().items.is_empty());
        // The neighbour is untouched.
        let (g2, lock2, t2) = &held[1];
        a.get_lease(OTHER, g2.id).await.unwrap();
        assert_eq!(a.get_lock(OTHER, "job").await.unwrap().fence, lock2.fence);
        a.consume(OTHER, &t2.token).await.unwrap();
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
    let Some(target) = targets().into_iter().find(|t| t.name == "standalone") else {
        return;
    };
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
