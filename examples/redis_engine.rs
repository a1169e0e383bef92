//! What the Redis engine's transitions cost, next to their floor: Redis's
//! own `redis-benchmark` doing `SET key value PX ttl` on the same server at
//! the same number of requests in flight, and next to the in-memory store.
//!
//! For each depth (1, 8 and 64 requests in flight on one connection, as one
//! relay instance's engine handle pipelines them) it runs `grant`, `renew`,
//! `get_lease`, the join trio (`begin_join`, `bind_endpoint`, `consume`)
//! `notify` (a listener of each tenant's channel attached, on another
//! handle), `append` (64 bytes to a stream that trims its oldest entries),
//! `read` (16 entries of 64 bytes), `job` (enqueue, claim, ack: three
//! operations) and `health` (on one server, one call of the library's
//! `writable` function, which only answers: the client side and the
//! smallest function call) for `--seconds`
//! each, then `redis-benchmark -c 1 -P <depth>`, and prints
//! ops/s and the ratio to the floor (target ≥ 0.5).
//! Runs only when `REDIS_URL` is set; `redis-benchmark` must be on PATH.
//! Keys go under a namespace of their own; the benchmark's floor writes
//! `relaystore-floor:*` keys with a one-minute expiry.
//!
//! ```text
//! scripts/redis-servers start   # prints REDIS_URL=...
//! REDIS_URL=redis://127.0.0.1:6390/ cargo run --release --example redis_engine -- --sessions 10000 --seconds 2
//! ```

#[path = "support/load.rs"]
mod load;
#[path = "support/mod.rs"]
mod support;

use relaystore::queue::{JobOptions, QueueConfig};
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{LeaseId, Store, StoreConfig, TenantId, TenantQuota};
use std::net::SocketAddr;
use std::process::Command;

use load::measure;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{options, Options};

const DEPTHS: [usize; 3] = [1, 8, 64];
/// The leases' TTL: long enough that none expires during a run of 27
/// rows of up to 10 minutes each (the renew row renews only those it picks).
const TTL: Duration = Duration::from_secs(6 * 60 * 60);
const TENANTS: u64 = 16;
const LOBBY: &str = "lobby";
/// The stream appends go to, and the one reads read.
const FEED: &str = "feed";
const LOG: &str = "log";
const ENTRY: [u8; 64] = [7; 64];
/// The queue the job rows go through.
const JOBS: &str = "jobs";
const JOIN_TTL: Duration = Duration::from_secs(1);
const SEEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::new(203, 0, 113, 7),
    4000,
));

fn main() {
    let o = options(
        Options::plain(10_000, 2, 1),
        "usage: redis_engine [--sessions N] [--seconds S] (with REDIS_URL set)",
    );
    let Ok(url) = std::env::var("REDIS_URL") else {
        println!("REDIS_URL is not set; nothing to measure (see the file's docs)");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(&url, &o));
}

async fn run(url: &str, o: &Options) {
    let namespace = format!("bench-{}", std::process::id());
    // Joins' replay memory kept briefly (a token is remembered for its
    // 1 s TTL and a 1 s grace) and sized for the fastest row: the
    // in-memory join trio, about 10^6 joins a second here, holds about
    // 2 x 10^6 records at any moment however long a row runs.
    let replay = 1 << 24;
    let config = StoreConfig::default()
        .leases_max(10_000_000)
        .replay_max(replay)
        .replay_grace(Duration::from_secs(1))
        .tenant(TenantQuota::default().replay_max(replay));
    let engine = RedisEngine::connect(
        RedisOptions::standalone(url).namespace(&namespace),
        config.clone(),
    )
    .await
    .expect("connect to REDIS_URL");
    let store = Store::builder()
        .config(config.clone())
        .build()
        .expect("an in-memory store");
    // The leases that renew and get touch, spread over tenants.
    let mut ids = Vec::new();
    let mut local = Vec::new();
    for i in 0..o.sessions {
        let tenant = TenantId(i % TENANTS);
        ids.push((
            tenant,
            engine
                .grant(tenant, "h", TTL, None)
                .await
                .expect("grant")
                .id,
        ));
        local.push((
            tenant,
            store.grant(tenant, "h", TTL, None).expect("grant").id,
        ));
    }
    // One listing per tenant for the joins, under a lease of its own.
    for t in 0..TENANTS {
        let tenant = TenantId(t);
        let host = engine
            .grant(tenant, "host", TTL * 4, None)
            .await
            .expect("grant");
        engine
            .publish(tenant, host.id, LOBBY, b"", None)
            .await
            .expect("publish");
        let host = store.grant(tenant, "host", TTL * 4, None).expect("grant");
        store
            .publish(tenant, host.id, LOBBY, b"", None)
            .expect("publish");
        let feed = StreamConfig::new(1024, 1 << 16, WhenFull::TrimOldest);
        let log = StreamConfig::new(1024, 1 << 16, WhenFull::Refuse);
        engine
            .create_stream(tenant, FEED, feed.clone())
            .await
            .expect("stream");
        engine
            .create_stream(tenant, LOG, log.clone())
            .await
            .expect("stream");
        store.create_stream(tenant, FEED, feed).expect("stream");
        store.create_stream(tenant, LOG, log).expect("stream");
        for _ in 0..16 {
            engine.append(tenant, LOG, &ENTRY).await.expect("append");
            store.append(tenant, LOG, &ENTRY).expect("append");
        }
        engine
            .create_queue(tenant, JOBS, QueueConfig::default())
            .await
            .expect("queue");
        store
            .create_queue(tenant, JOBS, QueueConfig::default())
            .expect("queue");
    }
    // A listener of each tenant's channel, on another handle (another
    // relay instance), so every notify reaches one; and in memory.
    let other = RedisEngine::connect(
        RedisOptions::standalone(url).namespace(&namespace),
        config.clone(),
    )
    .await
    .expect("connect to REDIS_URL");
    let mut listeners = Vec::new();
    for t in 0..TENANTS {
        listeners.push(other.listen(TenantId(t), LOBBY).await.expect("listen"));
        listeners.push(store.listen(TenantId(t), LOBBY).expect("listen"));
    }
    let (ids, local) = (Arc::new(ids), Arc::new(local));
    let seconds = Duration::from_secs(o.seconds);
    let (host, port) = host_port(url);
    println!(
        "Redis engine on {url}, {} leases over {TENANTS} tenants, {}s per row",
        o.sessions, o.seconds
    );
    println!(
        "{:>5}  {:>10}  {:>12}  {:>12}  {:>8}  {:>12}",
        "depth", "op", "engine/s", "floor/s", "ratio", "in-memory/s"
    );
    for depth in DEPTHS {
        let floor = floor(&host, port, depth);
        for op in [
            "grant",
            "renew",
            "get_lease",
            "join",
            "notify",
            "append",
            "read",
            "job",
            "health",
        ] {
            let (e, ids_r) = (engine.clone(), Arc::clone(&ids));
            let remote = measure(depth, seconds, move |k| {
                let (e, ids) = (e.clone(), Arc::clone(&ids_r));
                async move { one_remote(&e, &ids, op, k).await }
            })
            .await;
            let (s, ids_l) = (store.clone(), Arc::clone(&local));
            let memory = measure(1, seconds / 2, move |k| {
                let ok = one_local(&s, &ids_l, op, k);
                async move { ok }
            })
            .await;
            let ratio = floor.map_or(String::from("-"), |f| format!("{:.2}", remote / f));
            let floor = floor.map_or(String::from("-"), |f| format!("{f:.0}"));
            println!(
                "{depth:>5}  {op:>10}  {remote:>12.0}  {floor:>12}  {ratio:>8}  {memory:>12.0}"
            );
        }
    }
    wake_latency(&engine, &other).await;
    drop(listeners);
}

/// How long a notify on one handle takes to wake a listener on another
/// (one at a time, so no queueing): from the call to the listener's wake.
async fn wake_latency(a: &RedisEngine, b: &RedisEngine) {
    const ROUNDS: usize = 2_000;
    let tenant = TenantId(TENANTS + 1);
    let listener = b.listen(tenant, "latency").await.expect("listen");
    let mut latency = support::Histogram::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        a.notify(tenant, "latency").await.expect("notify");
        tokio::time::timeout(Duration::from_secs(5), listener.recv())
            .await
            .expect("a wake within 5 s")
            .expect("a wake");
        latency.record(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    println!(
        "wake across handles, notify to listener, {ROUNDS} one at a time: p50 {} µs, p99 {} µs, max {} µs",
        support::micros(latency.quantile(0.5)),
        support::micros(latency.quantile(0.99)),
        support::micros(latency.quantile(1.0)),
    );
}

/// One operation (a grant with the revoke that frees its room: two; a
/// join, begin + bind + consume: three); how many were done, 0 if one
/// failed.
async fn one_remote(e: &RedisEngine, ids: &[(TenantId, LeaseId)], op: &str, k: u64) -> u64 {
    let (tenant, id) = ids[(k as usize) % ids.len()];
    let ok = match op {
        "grant" => {
            let tenant = TenantId(k % TENANTS);
            match e.grant(tenant, "h", Duration::from_secs(1), None).await {
                Ok(g) => return 2 * u64::from(e.revoke(tenant, g.id).await.is_ok()),
                Err(_) => false,
            }
        }
        "join" => {
            let tenant = TenantId(k % TENANTS);
            let Ok(t) = e.begin_join(tenant, LOBBY, "c", JOIN_TTL, None).await else {
                return 0;
            };
            let bound = e.bind_endpoint(tenant, t.attempt, &t.token, SEEN).await;
            let consumed = e.consume(tenant, &t.token).await;
            return 3 * u64::from(bound.is_ok() && consumed.is_ok());
        }
        "renew" => e.renew(tenant, id, TTL).await.is_ok(),
        "notify" => e.notify(tenant, LOBBY).await.is_ok(),
        "health" => e.health().await == relaystore::Health::Ready,
        "append" => e.append(tenant, FEED, &ENTRY).await.is_ok(),
        "job" => {
            let tenant = TenantId(k % TENANTS);
            if e.enqueue(tenant, JOBS, &ENTRY, JobOptions::default())
                .await
                .is_err()
            {
                return 0;
            }
            let Ok(jobs) = e.claim(tenant, JOBS, "w", None, 1).await else {
                return 0;
            };
            // Another task may have claimed this one's job: then two calls.
            return match jobs.first() {
                Some(job) => 3 * u64::from(e.ack(tenant, JOBS, job.id, job.claim).await.is_ok()),
                None => 2,
            };
        }
        "read" => e
            .read_stream(tenant, LOG, 0, 16)
            .await
            .is_ok_and(|r| r.entries.len() == 16),
        _ => e.get_lease(tenant, id).await.is_ok(),
    };
    u64::from(ok)
}

/// [`one_remote`] on the in-memory store.
fn one_local(s: &Store, ids: &[(TenantId, LeaseId)], op: &str, k: u64) -> u64 {
    let (tenant, id) = ids[(k as usize) % ids.len()];
    let ok = match op {
        "grant" => {
            let tenant = TenantId(k % TENANTS);
            match s.grant(tenant, "h", Duration::from_secs(1), None) {
                Ok(g) => return 2 * u64::from(s.revoke(tenant, g.id).is_ok()),
                Err(_) => false,
            }
        }
        "join" => {
            let tenant = TenantId(k % TENANTS);
            let Ok(t) = s.begin_join(tenant, LOBBY, "c", JOIN_TTL, None) else {
                return 0;
            };
            let bound = s.bind_endpoint(tenant, t.attempt, &t.token, SEEN);
            let consumed = s.consume(tenant, &t.token);
            return 3 * u64::from(bound.is_ok() && consumed.is_ok());
        }
        "renew" => s.renew(tenant, id, TTL).is_ok(),
        "notify" => s.notify(tenant, LOBBY).is_ok(),
        "health" => s.health() == relaystore::Health::Ready,
        "append" => s.append(tenant, FEED, &ENTRY).is_ok(),
        "job" => {
            let tenant = TenantId(k % TENANTS);
            if s.enqueue(tenant, JOBS, &ENTRY, JobOptions::default())
                .is_err()
            {
                return 0;
            }
            let Ok(jobs) = s.claim(tenant, JOBS, "w", None, 1) else {
                return 0;
            };
            return match jobs.first() {
                Some(job) => 3 * u64::from(s.ack(tenant, JOBS, job.id, job.claim).is_ok()),
                None => 2,
            };
        }
        "read" => s
            .read_stream(tenant, LOG, 0, 16)
            .is_ok_and(|r| r.entries.len() == 16),
        _ => s.get_lease(tenant, id).is_ok(),
    };
    u64::from(ok)
}

/// `redis-benchmark`'s `SET key value PX 60000` rate on one connection
/// with `depth` requests pipelined; `None` if it is not installed.
fn floor(host: &str, port: u16, depth: usize) -> Option<f64> {
    let requests = (20_000 * depth.min(8)).to_string();
    let out = Command::new("redis-benchmark")
        .args(["-h", host, "-p", &port.to_string(), "-c", "1"])
        .args([
            "-P",
            &depth.to_string(),
            "-n",
            &requests,
            "-r",
            "100000",
            "-q",
        ])
        .args(["SET", "relaystore-floor:__rand_int__", "v", "PX", "60000"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // The last progress line carries the final rate.
    let line = text
        .split(['\r', '\n'])
        .rfind(|l| l.contains("requests per second"))?;
    let rate = line.split(" requests per second").next()?;
    rate.split_whitespace().last()?.parse().ok()
}

/// The host and port of a `redis://host:port/` URL.
fn host_port(url: &str) -> (String, u16) {
    let rest = url.trim_start_matches("redis://");
    let rest = rest.rsplit('@').next().unwrap_or(rest);
    let hostport = rest.split('/').next().unwrap_or(rest);
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h.to_owned(), p.parse().unwrap_or(6379)),
        None => (hostport.to_owned(), 6379),
    }
}
