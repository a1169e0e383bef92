//! Removal events on the Redis engine, across instances: what one handle
//! removes, another handle's subscribers see; expiries are found by the
//! sweeper (whichever handle holds its lease) and announced to all. (A
//! listener that misses messages is in `redis_faults.rs`, on a server of
//! its own, since cutting Pub/Sub connections would cut other tests'.)

mod redis;

use redis::{block_on, config, instances, targets, Target};
use relaystore::events::{Cause, Collection, Received, Subscription};
use relaystore::redis::RedisEngine;
use relaystore::TenantId;
use std::time::Duration;

const T: TenantId = TenantId(1);
const MS: Duration = Duration::from_millis(1);

/// Two relay instances on one fresh store of `target`.
async fn two_instances(target: &Target, test: &str) -> (RedisEngine, RedisEngine) {
    let mut engines = instances(target, test, 2, config()).await;
    let b = engines.pop().unwrap();
    (engines.pop().unwrap(), b)
}

/// The next `n` items `events` receives within `within`, as (collection,
/// tenant, cause) or a lag report.
async fn next(events: &Subscription, n: usize, within: Duration) -> Vec<Received> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    while got.len() < n {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(received)) => got.push(received),
            _ => break,
        }
    }
    got
}

fn kinds(received: &[Received]) -> Vec<(Collection, TenantId, Cause)> {
    let mut out: Vec<_> = received
        .iter()
        .map(|r| match r {
            Received::Event(e) => (e.collection, e.tenant, e.cause),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    out.sort_by_key(|&(c, t, cause)| (c as u8, t, format!("{cause:?}")));
    out
}

#[test]
fn one_instances_removals_reach_anothers_subscribers() {
    for target in targets() {
        block_on(async {
            let (a, b) = two_instances(&target, "events-across").await;
            let seen_by_a = a.subscribe().await.unwrap();
            let seen_by_b = b.subscribe().await.unwrap();
            let members_at_b = b.subscribe_to(&[Collection::Presence]).await.unwrap();
            let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
            a.publish(T, g.id, "lobby", b"", None).await.unwrap();
            a.heartbeat(T, "alice", MS * 60_000, None, Some(g.id))
                .await
                .unwrap();
            a.revoke(T, g.id).await.unwrap();
            // The handle that revoked has them when revoke returns.
            let mut own = Vec::new();
            while let Some(received) = seen_by_a.try_recv() {
                own.push(received);
            }
            assert_eq!(kinds(&own).len(), 3, "{}: {own:?}", target.name);
            let got = next(&seen_by_b, 3, Duration::from_secs(2)).await;
            assert_eq!(
                kinds(&got),
                vec![
                    (Collection::Leases, T, Cause::Revoked),
                    (Collection::Listings, T, Cause::Cascaded),
                    (Collection::Presence, T, Cause::Cascaded),
                ],
                "{}",
                target.name
            );
            let members = next(&members_at_b, 1, Duration::from_secs(1)).await;
            assert_eq!(
                kinds(&members),
                vec![(Collection::Presence, T, Cause::Cascaded)],
                "{}: a subscription to presence only",
                target.name
            );
            // Nothing else arrived: each removal is announced once, and
            // the revoking handle's listener does not deliver its own again.
            assert!(next(&seen_by_b, 1, MS * 300).await.is_empty());
            assert!(next(&seen_by_a, 1, MS * 100).await.is_empty());
        });
    }
}

#[test]
fn the_sweeper_announces_expiries_to_every_instance() {
    for target in targets() {
        block_on(async {
            let (a, b) = two_instances(&target, "events-expiry").await;
            let seen_by_a = a.subscribe().await.unwrap();
            let seen_by_b = b.subscribe().await.unwrap();
            let g = a.grant(T, "short", MS * 200, None).await.unwrap();
            a.try_lock(T, "job", "w", MS * 60_000, Some(g.id))
                .await
                .unwrap();
            a.heartbeat(TenantId(2), "bob", MS * 300, None, None)
                .await
                .unwrap();
            // Nobody calls again: only the sweeper (default interval,
            // 100 ms, on whichever handle holds its lease) can find them.
            let expected = vec![
                (Collection::Leases, T, Cause::Expired),
                (Collection::Presence, TenantId(2), Cause::Expired),
                (Collection::Locks, T, Cause::Cascaded),
            ];
            for (who, events) in [("a", &seen_by_a), ("b", &seen_by_b)] {
                let got = next(events, 3, Duration::from_secs(3)).await;
                assert_eq!(kinds(&got), expected, "{}: seen by {who}", target.name);
            }
        });
    }
}

/// A tenant revoked while it holds 300 leases, each with a listing: its
/// burial takes several sweeps and creations, and announces every lease
/// `Revoked` and every listing `Cascaded` exactly once, to the revoking
/// handle's subscribers and to another handle's (ADR 0071); the tenant's
/// neighbour hears nothing.
#[test]
fn a_tenant_revocation_is_announced_once_per_record_as_it_is_buried() {
    const LEASES: usize = 300;
    for target in targets() {
        block_on(async {
            let (a, b) = two_instances(&target, "events-burial").await;
            let seen_by_a = a.subscribe().await.unwrap();
            let seen_by_b = b.subscribe().await.unwrap();
            let other = TenantId(2);
            b.grant(other, "host", MS * 60_000, None).await.unwrap();
            for i in 0..LEASES {
                let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
                a.publish(T, g.id, &format!("room-{i}"), b"", None)
                    .await
                    .unwrap();
            }
            a.revoke_tenant(T).await.unwrap();
            // A creation of the tenant buries some, sweeps the rest.
            let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
            // Each sweep ends at most 256 leases of the tenant (with what
            // hangs from them): two are needed, a third finds nothing.
            for _ in 0..3 {
                a.sweep().await.unwrap();
            }
            for (who, events) in [("a", &seen_by_a), ("b", &seen_by_b)] {
                let got = next(events, 2 * LEASES + 1, MS * 2_000).await;
                assert_eq!(
                    got.len(),
                    2 * LEASES,
                    "{}: {who} heard one event per record, and no more",
                    target.name
                );
                let kinds = kinds(&got);
                let leases = kinds
                    .iter()
                    .filter(|k| **k == (Collection::Leases, T, Cause::Revoked))
                    .count();
                let listings = kinds
                    .iter()
                    .filter(|k| **k == (Collection::Listings, T, Cause::Cascaded))
                    .count();
                assert_eq!(
                    (leases, listings),
                    (LEASES, LEASES),
                    "{}: {who}",
                    target.name
                );
                let mut ids: Vec<String> = got
                    .iter()
                    .map(|r| match r {
                        Received::Event(e) => format!("{:?}", e.id),
                        other => panic!("unexpected {other:?}"),
                    })
                    .collect();
                ids.sort();
                ids.dedup();
                assert_eq!(ids.len(), 2 * LEASES, "{}: {who}: each once", target.name);
            }
            // The lease made after the revocation lives on.
            assert!(a.get_lease(T, g.id).await.is_ok());
        });
    }
}
