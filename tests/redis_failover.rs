//! Failover on a Redis Cluster with one replica per master, as
//! `docs/adr/0062-failover.md` promises it. During churn (joins consumed,
//! locks taken, leases granted and revoked), the replica of the master
//! serving the tenant stops and is cut off from its master for 400 ms,
//! the master is killed, and the replica, stale by those 400 ms, is
//! promoted. With `wait_replicas(1)`
//! nothing answered `Ok` is lost: every consumed token stays consumed,
//! every lock taken stays held with its fence, every revoked lease stays
//! revoked, fences issued after the promotion are above every fence
//! issued before it, and the new master, which has no replica yet, fails
//! the writes that wait for one closed while health says why. The broken twin, the same run without waiting for a
//! replica, must lose some of them. On six `redis-server`s each test
//! starts (three masters, three replicas); `redis-server` and `redis-cli`
//! must be on PATH.

mod redis;

use redis::servers::{admin, master_of, replicated_cluster, serving, Server};
use redis::{block_on, config, fresh_namespace};
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::{DegradedReason, Error, Health, JoinToken, LeaseId, TenantId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);
const MINUTE: Duration = Duration::from_secs(60);

/// What the churn saw answered `Ok`.
#[derive(Default)]
struct Acknowledged {
    consumed: Vec<JoinToken>,
    locks: Vec<(String, u64)>,
    revoked: Vec<LeaseId>,
    /// The highest fence (of a lease or a lock) answered.
    fence: u64,
}

#[test]
fn with_wait_replicas_a_failover_keeps_every_acknowledged_authorization() {
    let (seen, broken) = block_on(failover(1));
    let ack = &seen.acknowledged;
    assert!(
        !ack.consumed.is_empty() && !ack.locks.is_empty() && !ack.revoked.is_empty(),
        "the churn was acknowledged"
    );
    assert_eq!(broken, Vec::<String>::new(), "promises broken");
    assert!(seen.failed_closed, "no replica to wait for: {}", seen.alone);
    assert_eq!(
        seen.health,
        Health::Degraded {
            reason: DegradedReason::TooFewReplicas
        },
        "health says so"
    );
}

/// The broken twin: without waiting for a replica, writes answered `Ok`
/// while the replica was stopped are lost with the master.
#[test]
fn without_waiting_a_failover_loses_acknowledged_writes() {
    let (seen, broken) = block_on(failover(0));
    assert!(!broken.is_empty(), "the stale replica lost nothing");
    assert!(!seen.failed_closed, "nothing to wait for: {}", seen.alone);
    assert_eq!(seen.health, Health::Ready, "no replica needed");
}

/// What one failover run saw.
struct Run {
    acknowledged: Acknowledged,
    /// Whether a grant on the new master, alone, failed closed.
    failed_closed: bool,
    /// That grant's answer.
    alone: String,
    /// Health while the new master has no replica.
    health: Health,
}

/// One failover during churn, on engines waiting for `wait` replicas;
/// returns what was acknowledged and every promise it finds broken.
async fn failover(wait: u32) -> (Run, Vec<String>) {
    let (mut servers, dirs) = replicated_cluster().await;
    let namespace = fresh_namespace("failover");
    let urls: Vec<String> = servers.iter().map(Server::url).collect();
    let options = RedisOptions::cluster(&urls)
        .namespace(&namespace)
        .call_timeout(Duration::from_secs(1));
    let store = config().attempts_per_listing_max(10_000);
    let e = RedisEngine::connect(options.clone().wait_for_replicas(wait), store.clone())
        .await
        .unwrap();
    assert_eq!(
        e.health().await,
        Health::Ready,
        "every master has its replica"
    );
    let host = e.grant(T, "host", MINUTE * 10, None).await.unwrap();
    e.publish(T, host.id, "lobby", b"", None).await.unwrap();
    // The listing is on the replica too before anything is stopped.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let seen = Arc::new(Mutex::new(Acknowledged::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut churn = Vec::new();
    for worker in 0..3u32 {
        let (e, seen, stop) = (e.clone(), Arc::clone(&seen), Arc::clone(&stop));
        churn.push(tokio::spawn(async move {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                match worker {
                    0 => join_once(&e, &seen, i).await,
                    1 => lock_once(&e, &seen, i).await,
                    _ => revoke_once(&e, &seen).await,
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let key = format!("{{{namespace}:{}}}:inc", T.0);
    let nodes = serving(&servers[0], &key).await;
    let (doomed, replica) = (nodes[0], nodes[1]);
    let at = |port: u16| servers.iter().position(|s| s.port == port).unwrap();
    let (doomed_at, replica_at) = (at(doomed), at(replica));
    // The replica falls behind: stopped, and cut off from its master's
    // stream (what was already sent waits in its socket), so writes
    // answered now reach only the master.
    servers[replica_at].signal("-STOP");
    let _: i64 = ::redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "replica"][..])
        .query_async(&mut admin(&servers[doomed_at]).await)
        .await
        .expect("CLIENT KILL TYPE replica");
    let count = || {
        let seen = seen.lock().unwrap();
        seen.consumed.len() + seen.locks.len() + seen.revoked.len()
    };
    let before = count();
    tokio::time::sleep(Duration::from_millis(400)).await;
    if wait == 0 {
        // Writes answered while the replica is away (on a loaded machine
        // the churn may need longer than 400 ms to make some).
        let deadline = Instant::now() + Duration::from_secs(10);
        while count() < before + 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    servers[doomed_at].kill();
    servers[replica_at].signal("-CONT");
    // Taken over once every node left names the replica as the key's
    // master (a node's view lags the promotion by its gossip; the health
    // probe asks one node for the slot map, and a view naming the dead
    // master would read as an unreachable primary).
    let deadline = Instant::now() + Duration::from_secs(30);
    for (at, server) in servers.iter().enumerate() {
        if at == doomed_at {
            continue;
        }
        while master_of(server, &key).await != replica {
            assert!(Instant::now() < deadline, "the replica never took over");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for task in churn {
        task.await.unwrap();
    }
    // Once the handle routes to the new master (a read answers), a write
    // that waits for a replica fails closed there: it has none until the
    // old master comes back as one.
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.get_lease(T, host.id).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the handle never reached the new master"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // (Without a wait, a grant is safe to repeat until it is answered.)
    let grant = || e.grant(T, "alone", MINUTE, None);
    let alone = if wait == 0 {
        answered(grant).await
    } else {
        settled(grant).await
    };
    // Refused for want of a replica, or (on a machine too loaded for the
    // wait to answer in time) timed out: closed either way.
    let failed_closed = matches!(
        &alone,
        Err(Error::BackendUnavailable {
            may_have_run: true,
            ..
        })
    );
    let alone = format!("{:?}", alone.map(drop));
    let health = e.health().await;
    let acknowledged = std::mem::take(&mut *seen.lock().unwrap());
    // Checked through a handle that waits for no replica (a connect asks
    // every primary, so on a loaded machine it may take a few tries while
    // the cluster settles after the failover).
    let deadline = Instant::now() + Duration::from_secs(10);
    let e = loop {
        match RedisEngine::connect(options.clone(), store.clone()).await {
            Ok(e) => break e,
            Err(err) => {
                assert!(
                    Instant::now() < deadline,
                    "no handle after the failover: {err}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let mut broken = Vec::new();
    for token in &acknowledged.consumed {
        match answered(|| e.consume(T, token, None)).await {
            Err(Error::ReplayRejected) => {}
            other => broken.push(format!("a consumed token, again: {:?}", other.map(drop))),
        }
    }
    for (name, fence) in &acknowledged.locks {
        match answered(|| e.get_lock(T, name)).await {
            Ok(lock) if lock.fence == *fence => {}
            other => broken.push(format!("lock {name}: {:?}", other.map(|l| l.fence))),
        }
    }
    for lease in &acknowledged.revoked {
        match answered(|| e.get_lease(T, *lease)).await {
            Err(Error::Revoked) => {}
            other => broken.push(format!("a revoked lease: {:?}", other.map(drop))),
        }
    }
    let after = answered(|| e.grant(T, "late", MINUTE, None)).await.unwrap();
    if after.fence <= acknowledged.fence {
        broken.push(format!(
            "a fence went back: {} after {}",
            after.fence, acknowledged.fence
        ));
    }
    drop(e);
    drop(servers);
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
    let run = Run {
        acknowledged,
        failed_closed,
        alone,
        health,
    };
    (run, broken)
}

/// `call`'s answer, asked again while it is refused before running (a
/// redirect while a handle learns the new slot map), for up to 10 s.
async fn settled<T, F, Fut>(call: F) -> Result<T, Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    again(call, false).await
}

/// `call`'s answer, asked again while the backend does not give one, for
/// up to 10 s: for the checks, whose calls are safe to repeat (reads, a
/// consume of a consumed token, a grant), on a machine loaded enough to
/// time one out.
async fn answered<T, F, Fut>(call: F) -> Result<T, Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    again(call, true).await
}

async fn again<T, F, Fut>(call: F, even_if_it_may_have_run: bool) -> Result<T, Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match call().await {
            Err(Error::BackendUnavailable { may_have_run, .. })
                if (even_if_it_may_have_run || !may_have_run) && Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

/// One join: begin, bind, consume; the token is recorded if the consume
/// was answered `Ok`.
async fn join_once(e: &RedisEngine, seen: &Mutex<Acknowledged>, i: u32) {
    let Ok(ticket) = e
        .begin_join(T, "lobby", &format!("c{i}"), MINUTE, None)
        .await
    else {
        tokio::time::sleep(Duration::from_millis(20)).await;
        return;
    };
    let addr = "127.0.0.1:4000".parse().unwrap();
    let admitted = match e
        .bind_endpoint(T, ticket.attempt, &ticket.token, addr)
        .await
    {
        Ok(_) => e.consume(T, &ticket.token, None).await.is_ok(),
        Err(_) => false,
    };
    if admitted {
        seen.lock().unwrap().consumed.push(ticket.token);
    } else {
        // Failed closed (no replica to wait for, say): the attempt is
        // given up, or it lapses.
        let _ = e.cancel_join(T, ticket.attempt).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One lock taken under a new name, recorded with its fence.
async fn lock_once(e: &RedisEngine, seen: &Mutex<Acknowledged>, i: u32) {
    let name = format!("l{i}");
    match e.try_lock(T, &name, "a", MINUTE * 10, None).await {
        Ok(Some(lock)) => {
            let mut seen = seen.lock().unwrap();
            seen.fence = seen.fence.max(lock.fence);
            seen.locks.push((name, lock.fence));
        }
        _ => tokio::time::sleep(Duration::from_millis(20)).await,
    }
}

/// One lease granted and revoked, recorded if the revoke was answered.
async fn revoke_once(e: &RedisEngine, seen: &Mutex<Acknowledged>) {
    let Ok(g) = e.grant(T, "guest", MINUTE * 10, None).await else {
        tokio::time::sleep(Duration::from_millis(20)).await;
        return;
    };
    {
        let mut seen = seen.lock().unwrap();
        seen.fence = seen.fence.max(g.fence);
    }
    if e.revoke(T, g.id).await.is_ok() {
        seen.lock().unwrap().revoked.push(g.id);
    }
}
