//! The capacity run on the Redis engine (`--engine redis` or
//! `--engine redis-cluster`): the same sessions and the same operation mix
//! as on the embedded store, through one engine handle (one connection, or
//! the cluster client) with `IN_FLIGHT` requests in flight, spread over
//! `--threads` runtime threads. It reports what an operator sizing Redis
//! needs: throughput and latency per operation, the server's memory per
//! session, and the server's CPU per session at relay rates (standalone).
//! Expiry lag is measured as on the embedded store, from each vanished
//! member's deadline to its removal event reaching a subscriber; on this
//! engine the sweeper finds expiries every `sweep_interval` (100 ms).

use super::{
    listing, pick, print_table, Op, Tally, LEASE_TTL, MEMBERS, MIX, PRESENCE_TTL, TENANTS,
    VANISH_TTL,
};
use crate::support::{Histogram, Options};
use relaystore::events::{Cause, Collection, Received, RecordId};
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::{LeaseId, StoreConfig, TenantId};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requests in flight on the engine handle during the mix.
const IN_FLIGHT: usize = 64;

struct Session {
    tenant: TenantId,
    lease: Mutex<LeaseId>,
}

pub fn run(o: &Options, config: StoreConfig) -> Result<(), Box<dyn std::error::Error>> {
    let cluster = o.engine.as_deref() == Some("redis-cluster");
    let (var, options) = if cluster {
        let urls =
            std::env::var("REDIS_CLUSTER_URLS").map_err(|_| "REDIS_CLUSTER_URLS is not set")?;
        let seeds: Vec<&str> = urls.split(',').filter(|s| !s.is_empty()).collect();
        (urls.clone(), RedisOptions::cluster(&seeds))
    } else {
        let url = std::env::var("REDIS_URL").map_err(|_| "REDIS_URL is not set")?;
        (url.clone(), RedisOptions::standalone(&url))
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.threads)
        .enable_all()
        .build()?;
    runtime.block_on(mix(o, config, &var, options, cluster))
}

async fn mix(
    o: &Options,
    config: StoreConfig,
    target: &str,
    options: RedisOptions,
    cluster: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = o.sessions;
    let namespace = format!("capacity-{}", std::process::id());
    let options = options
        .namespace(&namespace)
        .call_timeout(Duration::from_secs(2));
    let engine = RedisEngine::connect(options, config).await?;
    let server = if cluster {
        None
    } else {
        Some(redis::Client::open(target)?)
    };
    println!(
        "relaystore capacity run on the Redis engine ({target}): {n} sessions ({TENANTS} tenants, {MEMBERS} members each), {IN_FLIGHT} requests in flight over {} threads, {} s",
        o.threads, o.seconds
    );
    let memory_before = server_info(&server, "used_memory").await;
    let setup = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let mut hosts = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let (engine, next) = (engine.clone(), Arc::clone(&next));
        hosts.spawn(async move {
            let mut hosted = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, relaystore::Error>(hosted);
                }
                hosted.push((i, host(&engine, i).await?));
            }
        });
    }
    let mut leases = vec![None; n as usize];
    while let Some(hosted) = hosts.join_next().await {
        for (i, lease) in hosted?? {
            leases[i as usize] = Some(lease);
        }
    }
    let sessions: Arc<Vec<Session>> = Arc::new(
        leases
            .into_iter()
            .enumerate()
            .map(|(i, lease)| Session {
                tenant: TenantId(i as u64 % TENANTS),
                lease: Mutex::new(lease.expect("every session hosted")),
            })
            .collect(),
    );
    let memory_per_session = match (memory_before, server_info(&server, "used_memory").await) {
        (Some(a), Some(b)) => Some((b - a) / n as f64),
        _ => None,
    };
    println!("hosted {n} sessions in {:.2?}", setup.elapsed());

    // Expiry lag from the removal events: a reader task waits for each
    // (the timeout only lets it notice the end of the run).
    let events = engine.subscribe_to(&[Collection::Presence]).await?;
    let deadlines: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let reading = Arc::new(AtomicBool::new(true));
    let reader = {
        let (reading, deadlines) = (Arc::clone(&reading), Arc::clone(&deadlines));
        tokio::spawn(async move {
            let mut lag = Histogram::new();
            while reading.load(Ordering::Relaxed) {
                let wait = tokio::time::timeout(Duration::from_millis(100), events.recv());
                let event = match wait.await {
                    Ok(Ok(Received::Event(event))) => event,
                    Ok(Ok(Received::Lagged { .. })) | Err(_) => continue,
                    Ok(Err(_)) => break,
                };
                if let (Cause::Expired, RecordId::Member(m)) = (event.cause, &event.id) {
                    if let Some(deadline) = deadlines.lock().unwrap().remove(&**m) {
                        let late = Instant::now().saturating_duration_since(deadline);
                        lag.record(late.as_nanos() as u64);
                    }
                }
            }
            lag
        })
    };

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let cpu_before = server_cpu(&server).await;
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..IN_FLIGHT {
        let (engine, sessions, stop, done, deadlines) = (
            engine.clone(),
            Arc::clone(&sessions),
            Arc::clone(&stop),
            Arc::clone(&done),
            Arc::clone(&deadlines),
        );
        workers.spawn(async move {
            let mut tally = Tally::new();
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (w as u64 + 1);
            let mut vanishing = Vanishing {
                worker: w,
                made: 0,
                deadlines,
            };
            while !stop.load(Ordering::Relaxed) {
                let (op, i) = pick(&mut x, n);
                let t0 = Instant::now();
                let result = perform(&engine, &sessions, op, i, x, &mut vanishing).await;
                tally.record(op, result, Some(t0.elapsed().as_nanos() as u64));
                done.fetch_add(1, Ordering::Relaxed);
            }
            tally
        });
    }
    let mut last = 0;
    for second in 1..=o.seconds {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let total = done.load(Ordering::Relaxed);
        println!("  t={second:>3}s {:>10.0} mix ops/s", (total - last) as f64);
        last = total;
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_used = match (cpu_before, server_cpu(&server).await) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let mut tally = Tally::new();
    while let Some(t) = workers.join_next().await {
        tally.merge(t?);
    }
    // Members that vanished in the last second expire now: keep reading.
    tokio::time::sleep(VANISH_TTL + Duration::from_millis(400)).await;
    reading.store(false, Ordering::Relaxed);
    let lag = reader.await?;
    let (mix_total, store_ops_total, _) = print_table(
        &tally.hist,
        &tally.counts,
        &tally.failures,
        &tally.refusals,
        elapsed,
    );
    let total_rate: f64 = MIX.iter().map(|m| m.1).sum();
    let gib = (1u64 << 30) as f64;
    match memory_per_session {
        Some(bytes) => println!(
            "memory: {bytes:.0} bytes of Redis memory per session (used_memory, at setup) = {:.0} sessions per GiB",
            gib / bytes
        ),
        None => println!("memory: not measured on a cluster (add up the primaries' used_memory)"),
    }
    match cpu_used {
        Some(cpu) if cpu > 0.0 => {
            let per_cpu_second = mix_total as f64 / cpu;
            println!(
                "redis cpu: {cpu:.1} s over {elapsed:.1} s ({:.2} cores busy); one Redis core sustains ~{:.0} sessions at these rates ({:.0} store operations per Redis CPU-second)",
                cpu / elapsed,
                per_cpu_second / total_rate,
                store_ops_total as f64 / cpu
            );
        }
        _ => println!("redis cpu: not measured on a cluster"),
    }
    let ms = |q| lag.quantile(q) as f64 / 1e6;
    println!(
        "expiry lag over {} vanished members: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        lag.count(),
        ms(0.5),
        ms(0.99),
        ms(1.0)
    );
    println!("  (from a member's deadline to its removal event reaching a subscriber; the sweeper looks every 100 ms)");
    Ok(())
}

async fn host(e: &RedisEngine, i: u64) -> Result<LeaseId, relaystore::Error> {
    let tenant = TenantId(i % TENANTS);
    let lease = e
        .grant(tenant, &format!("host-{i}"), LEASE_TTL, None)
        .await?;
    e.publish(tenant, lease.id, &listing(i), b"mode=ffa;slots=8", None)
        .await?;
    for m in 0..MEMBERS {
        e.heartbeat(tenant, &format!("s{i}-m{m}"), PRESENCE_TTL, None, None)
            .await?;
    }
    Ok(lease.id)
}

/// A worker's vanishing members: how many it made, and the deadlines of
/// every worker's (for the expiry lag).
struct Vanishing {
    worker: usize,
    made: u64,
    deadlines: Arc<Mutex<HashMap<String, Instant>>>,
}

/// One operation of the mix, as the embedded run performs it.
async fn perform(
    e: &RedisEngine,
    sessions: &[Session],
    op: Op,
    i: u64,
    x: u64,
    vanishing: &mut Vanishing,
) -> Result<(), relaystore::Error> {
    let s = &sessions[i as usize];
    match op {
        Op::Heartbeat => {
            let member = format!("s{i}-m{}", x % MEMBERS);
            e.heartbeat(s.tenant, &member, PRESENCE_TTL, None, None)
                .await
                .map(drop)
        }
        Op::Lookup => e.get_listing(s.tenant, &listing(i)).await.map(drop),
        Op::Join => {
            let addr = SocketAddr::from(([203, 0, 113, (x % 250) as u8], 40_000));
            let ticket = e
                .begin_join(
                    s.tenant,
                    &listing(i),
                    "client",
                    Duration::from_secs(10),
                    None,
                )
                .await?;
            e.bind_endpoint(s.tenant, ticket.attempt, &ticket.token, addr)
                .await?;
            e.consume(s.tenant, &ticket.token).await.map(drop)
        }
        Op::Refresh => {
            let lease = *s.lease.lock().unwrap();
            e.renew(s.tenant, lease, LEASE_TTL).await.map(drop)
        }
        Op::Churn => {
            let old = *s.lease.lock().unwrap();
            let _ = e.revoke(s.tenant, old).await;
            let id = e.grant(s.tenant, "host", LEASE_TTL, None).await?.id;
            *s.lease.lock().unwrap() = id;
            e.publish(s.tenant, id, &listing(i), b"mode=ffa", None)
                .await
                .map(drop)
        }
        Op::Vanish => {
            vanishing.made += 1;
            let member = format!("gone-{}-{}", vanishing.worker, vanishing.made);
            e.heartbeat(s.tenant, &member, VANISH_TTL, None, None)
                .await?;
            let deadline = Instant::now() + VANISH_TTL;
            vanishing.deadlines.lock().unwrap().insert(member, deadline);
            Ok(())
        }
    }
}

/// A number from the standalone server's `INFO` (`None` on a cluster).
async fn server_info(server: &Option<redis::Client>, field: &str) -> Option<f64> {
    let client = server.as_ref()?;
    let mut conn = client.get_multiplexed_async_connection().await.ok()?;
    let info: String = redis::cmd("INFO")
        .arg("all")
        .query_async(&mut conn)
        .await
        .ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
}

/// The standalone server's CPU time so far, system and user, in seconds.
async fn server_cpu(server: &Option<redis::Client>) -> Option<f64> {
    Some(server_info(server, "used_cpu_sys").await? + server_info(server, "used_cpu_user").await?)
}
