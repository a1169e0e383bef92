//! What `RedisOptions::wait_replicas` costs: the writes an authorization
//! rests on (`grant` with its `revoke`, `try_lock`, and the join trio
//! `begin_join`, `bind_endpoint`, `consume`), at 1, 8 and 64 in flight on
//! one engine handle, without waiting for a replica and waiting for one,
//! three rounds each; prints the medians and their ratio.
//!
//! `REDIS_URL` must name a master with at least one replica attached (the
//! example checks); keys go under a namespace of their own. For example,
//! on loopback:
//!
//! ```text
//! redis-server --port 6392 --save '' --appendonly no --daemonize yes
//! redis-server --port 6393 --save '' --appendonly no --daemonize yes --replicaof 127.0.0.1 6392
//! REDIS_URL=redis://127.0.0.1:6392/ cargo run --release --example redis_wait -- --seconds 2
//! ```

#[path = "support/load.rs"]
mod load;
#[path = "support/mod.rs"]
mod support;

use load::measure;
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::{StoreConfig, TenantId};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use support::{options, Options};

const DEPTHS: [usize; 3] = [1, 8, 64];
const ROUNDS: usize = 3;
const TTL: Duration = Duration::from_secs(60);
const TENANTS: u64 = 16;
const LOBBY: &str = "lobby";
/// Numbers the lock names and join clients of every row.
static NAMES: AtomicU64 = AtomicU64::new(0);
const SEEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::new(203, 0, 113, 7),
    4000,
));

fn main() {
    let o = options(
        Options::plain(1, 2, 1),
        "usage: redis_wait [--seconds S] (with REDIS_URL naming a master with a replica)",
    );
    let Ok(url) = std::env::var("REDIS_URL") else {
        eprintln!("REDIS_URL is not set; nothing to measure (see the file's docs)");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(&url, Duration::from_secs(o.seconds)));
}

async fn run(url: &str, span: Duration) {
    let replicas = connected_replicas(url).await;
    if replicas == 0 {
        eprintln!("{url} has no replica attached: nothing to wait for (see the file's docs)");
        std::process::exit(2);
    }
    println!("{url}: a master with {replicas} replica(s); {span:?} per row, median of {ROUNDS}");
    println!(
        "{:>5} {:>10} {:>14} {:>14} {:>7}",
        "depth", "op", "wait 0 ops/s", "wait 1 ops/s", "ratio"
    );
    let config = StoreConfig::default()
        .leases_max(10_000_000)
        .replay_grace(Duration::from_secs(1));
    let namespace = format!("wait-{}", std::process::id());
    let mut engines = Vec::new();
    for wait in [0, 1] {
        let options = RedisOptions::standalone(url)
            .namespace(&namespace)
            .wait_for_replicas(wait);
        engines.push(
            RedisEngine::connect(options, config.clone())
                .await
                .expect("connect to REDIS_URL"),
        );
    }
    for t in 0..TENANTS {
        let host = engines[0]
            .grant(TenantId(t), "host", TTL * 60, None)
            .await
            .expect("grant");
        engines[0]
            .publish(TenantId(t), host.id, LOBBY, b"", None)
            .await
            .expect("publish");
    }
    for depth in DEPTHS {
        for op in ["grant", "try_lock", "join"] {
            let mut rates = [Vec::new(), Vec::new()];
            for _ in 0..ROUNDS {
                for (rate, engine) in rates.iter_mut().zip(&engines) {
                    let e = engine.clone();
                    rate.push(measure(depth, span, move |k| one(e.clone(), op, k)).await);
                }
            }
            let [plain, waiting] = rates.map(median);
            println!(
                "{depth:>5} {op:>10} {plain:>14.0} {waiting:>14.0} {:>7.2}",
                waiting / plain
            );
        }
    }
}

/// The `k`th operation of row `op`: how many calls it made, 0 if one
/// failed.
async fn one(e: RedisEngine, op: &str, k: u64) -> u64 {
    let tenant = TenantId(k % TENANTS);
    let ok = match op {
        // The revoke frees the grant's room again (and waits too).
        "grant" => match e.grant(tenant, "h", TTL, None).await {
            Ok(g) => e.revoke(tenant, g.id).await.is_ok(),
            Err(_) => false,
        },
        "try_lock" => {
            // A name never taken before (the lock lapses after its TTL).
            let name = format!("l{}", NAMES.fetch_add(1, Ordering::Relaxed));
            matches!(
                e.try_lock(tenant, &name, "h", Duration::from_secs(1), None)
                    .await,
                Ok(Some(_))
            )
        }
        _ => {
            let client = format!("c{}", NAMES.fetch_add(1, Ordering::Relaxed));
            match e
                .begin_join(tenant, LOBBY, &client, Duration::from_secs(1), None)
                .await
            {
                Ok(t) => {
                    e.bind_endpoint(tenant, t.attempt, &t.token, SEEN)
                        .await
                        .is_ok()
                        && e.consume(tenant, &t.token, None).await.is_ok()
                }
                Err(_) => false,
            }
        }
    };
    match (ok, op) {
        (false, _) => 0,
        (true, "try_lock") => 1,
        (true, "grant") => 2,
        (true, _) => 3,
    }
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// `connected_slaves` of the server's `INFO replication`.
async fn connected_replicas(url: &str) -> u64 {
    let mut conn = redis::Client::open(url)
        .expect("a redis:// URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to REDIS_URL");
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut conn)
        .await
        .expect("INFO replication");
    info.lines()
        .find_map(|l| l.strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
