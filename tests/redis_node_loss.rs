//! What a cluster master's loss leaves working: the tenants of the other
//! masters go on creating, renewing and joining, because the store-wide
//! ceilings are counted in shares spread over the slots (ADR 0070), not in
//! the one slot of the store's meta key. The room of the lost shares is
//! counted as full, so the ceiling is never overshot. The meta key's own
//! master is the exception: its empty restart restarts the whole store.
//! Each test starts
//! `redis-server` processes of its own on free loopback ports (the binary
//! must be on PATH: its absence fails the test, saying how to install it).

mod redis;

use redis::servers::{admin, slot_of, two_master_cluster_with, Server};
use redis::{block_on, config, fresh_namespace};
use relaystore::events::Collection;
use relaystore::redis::{RedisEngine, RedisOptions, ROOM_SHARES};
use relaystore::{Error, Scope, TenantId};
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);
/// Two reservations per share.
const LEASES_MAX: u64 = 2 * ROOM_SHARES as u64;

/// The number of lease reservations share `share` holds, read on the
/// master that serves it.
async fn held(server: &Server, namespace: &str, share: usize) -> u64 {
    let key = match share {
        0 => format!("{{{namespace}}}:room:l"),
        share => format!("{{{namespace}:r{share}}}:room:l"),
    };
    ::redis::cmd("ZCARD")
        .arg(&key)
        .query_async(&mut admin(server).await)
        .await
        .expect("ZCARD of a share")
}

/// The meta key's master dies, with no replica: a tenant of the other
/// master renews a lease whose room sat on the dead master (it gets room
/// elsewhere), makes a lease, a listing, a presence record, a lock and a
/// join, and fills the store's live room exactly: the refusal counts the
/// dead master's shares as full. On the old layout every one of these
/// needed the dead master.
#[test]
fn a_lost_master_leaves_the_other_masters_tenants_creating() {
    block_on(async {
        // Every master keeps answering for its own slots when another is
        // gone, as a deployment without replicas must be set up.
        let (mut servers, dirs) =
            two_master_cluster_with(&["--cluster-require-full-coverage", "no"]).await;
        let half = |slot: u16| usize::from(slot >= 8192);
        // A namespace whose shares sit on both masters (most do): the
        // meta key's master (which dies) and the other one.
        let (namespace, meta, dying) = loop {
            let namespace = fresh_namespace("shares");
            let meta = half(slot_of(&servers[0], &format!("{{{namespace}}}:meta")).await);
            let mut dying = vec![0];
            for share in 1..ROOM_SHARES {
                let key = format!("{{{namespace}:r{share}}}:room");
                if half(slot_of(&servers[0], &key).await) == meta {
                    dying.push(share);
                }
            }
            if dying.len() > 2 && dying.len() < ROOM_SHARES - 2 {
                break (namespace, meta, dying);
            }
        };
        let live = 1 - meta;
        let living_shares = (ROOM_SHARES - dying.len()) as u64;
        let urls: Vec<String> = servers.iter().map(Server::url).collect();
        let options = RedisOptions::cluster(&urls)
            .namespace(&namespace)
            .call_timeout(MS * 500);
        let e = RedisEngine::connect(options, config().leases_max(LEASES_MAX))
            .await
            .unwrap();
        // Tenants served by the master that lives on, each made before
        // the loss (a tenant's first record registers it with the meta
        // key).
        let mut tenants = Vec::new();
        for t in 1..400u64 {
            if half(slot_of(&servers[0], &format!("{{{namespace}:{t}}}:inc")).await) == live {
                tenants.push(TenantId(t));
            }
        }
        // A short lease whose room is on a share of the dying master: each
        // tenant's first lease takes room on its own share; those that
        // landed on a living share are revoked again (giving it back).
        let mut moved = None;
        for &tenant in &tenants {
            let mut before = Vec::new();
            for &share in &dying[1..] {
                before.push(held(&servers[meta], &namespace, share).await);
            }
            let g = e.grant(tenant, "h", MS * 2_000, None).await.unwrap();
            let mut after = Vec::new();
            for &share in &dying[1..] {
                after.push(held(&servers[meta], &namespace, share).await);
            }
            if after != before {
                moved = Some((tenant, g));
                break;
            }
            e.revoke(tenant, g.id).await.unwrap();
        }
        let (kept, g) = moved.expect("a tenant whose room is on a share of the dying master");
        let other = *tenants.iter().find(|&&t| t != kept).unwrap();
        e.grant(other, "h", MS * 60_000, None).await.unwrap();

        servers[meta].kill();

        // Renewed past its reservation: the reservation moves to a living
        // share.
        let renewed = e.renew(kept, g.id, MS * 60_000).await;
        assert!(renewed.is_ok(), "renew past the reservation: {renewed:?}");
        let lease = e.grant(kept, "h", MS * 60_000, None).await.unwrap();
        e.publish(kept, lease.id, "room", b"", None).await.unwrap();
        e.heartbeat(kept, "alice", MS * 60_000, None, Some(lease.id))
            .await
            .unwrap();
        e.try_lock(kept, "job", "a", MS * 60_000, Some(lease.id))
            .await
            .unwrap()
            .expect("a lock nobody holds");
        e.begin_join(kept, "room", "bob", MS * 60_000, None)
            .await
            .unwrap();
        // A tenant never seen before needs the meta key for its first
        // record: it fails closed.
        let fresh = e.grant(TenantId(1_000_000), "h", MS * 60_000, None).await;
        assert!(
            matches!(fresh, Err(Error::BackendUnavailable { .. })),
            "a new tenant's first record: {fresh:?}"
        );
        // The living shares fill, and no further.
        let mut more = 0;
        let refusal = loop {
            match e.grant(other, "h", MS * 60_000, None).await {
                Ok(_) => more += 1,
                Err(refusal) => break refusal,
            }
            assert!(more <= LEASES_MAX, "the ceiling was overshot");
        };
        assert!(more > 0, "nothing more was made");
        let mut living = 0;
        for share in (1..ROOM_SHARES).filter(|s| !dying.contains(s)) {
            living += held(&servers[live], &namespace, share).await;
        }
        assert_eq!(living, 2 * living_shares, "the living shares' room");
        assert_eq!(
            refusal,
            Error::CapacityExceeded {
                scope: Scope::Collection(Collection::Leases),
                limit: LEASES_MAX,
                used: LEASES_MAX,
            }
        );
        // A removal gives its room back to a living share at once.
        e.revoke(kept, lease.id).await.unwrap();
        e.grant(other, "h", MS * 60_000, None).await.unwrap();
        drop(e);
        drop(servers);
        for dir in dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
}

/// The meta key's master is the store's root (ADR 0029): when it comes
/// back empty, the first handle to read the meta key begins a new store
/// incarnation, and the records of every tenant, those on masters that
/// lost nothing included, then answer `Restarted`. What this test pins is
/// a limit, not a goal: a deployment keeps a replica of that master
/// (README, "Shared by several relay processes").
#[test]
fn the_meta_masters_empty_restart_restarts_the_whole_store() {
    block_on(async {
        let (mut servers, dirs) =
            two_master_cluster_with(&["--cluster-require-full-coverage", "no"]).await;
        let namespace = fresh_namespace("root");
        let half = |slot: u16| usize::from(slot >= 8192);
        let meta = half(slot_of(&servers[0], &format!("{{{namespace}}}:meta")).await);
        let mut kept = None;
        for t in 1..64u64 {
            if half(slot_of(&servers[0], &format!("{{{namespace}:{t}}}:inc")).await) != meta {
                kept = Some(TenantId(t));
                break;
            }
        }
        let kept = kept.expect("a tenant on the master that keeps its data");
        let urls: Vec<String> = servers.iter().map(Server::url).collect();
        let options = RedisOptions::cluster(&urls)
            .namespace(&namespace)
            .call_timeout(Duration::from_secs(2));
        let e = RedisEngine::connect(options, config()).await.unwrap();
        let g = e.grant(kept, "host", MS * 60_000, None).await.unwrap();
        let before = e.incarnation();
        servers[meta].restart();
        redis::servers::wait_cluster_ok(&servers[1 - meta]).await;
        // Until a handle reads the meta key again, nothing has changed.
        assert_eq!(e.get_lease(kept, g.id).await.unwrap().id, g.id);
        // A tenant never seen before makes the handle read it (once the
        // handle has a connection to the restarted master again).
        let mut tries = 0;
        while let Err(err) = e.grant(TenantId(1_000_000), "h", MS * 60_000, None).await {
            tries += 1;
            assert!(tries < 50, "the restarted master never answered: {err:?}");
            tokio::time::sleep(MS * 100).await;
        }
        assert_ne!(e.incarnation(), before, "a new store incarnation");
        assert_eq!(
            e.get_lease(kept, g.id).await.map(drop),
            Err(Error::Restarted),
            "a tenant whose master lost nothing"
        );
        drop(e);
        drop(servers);
        for dir in dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
}
