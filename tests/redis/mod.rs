//! What the Redis engine's tests share: where the servers are, fresh
//! engines in namespaces of their own, and a runtime.
//!
//! The servers come from the environment: `REDIS_URL` (one server),
//! `REDIS_CLUSTER_URLS` (comma-separated seeds of a Redis Cluster) and
//! `REDIS_REPLICATED_URLS` (seeds of a cluster whose masters have a
//! replica each); `scripts/redis-servers start` starts them on loopback
//! and prints them.
//! A missing variable or an unreachable server fails the test: none passes
//! without having talked to a server. `scripts/test` (the README's test
//! command) installs and starts the servers and sets the variables.

#![allow(dead_code)] // each test binary uses its own part

pub mod conformance;
pub mod servers;

use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::{Error, StoreConfig};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A server kind the tests run on.
#[derive(Clone, Debug)]
pub struct Target {
    pub name: &'static str,
    pub options: RedisOptions,
}

/// How long the tests' engines wait for an answer. A call that times out
/// may still have run, so its outcome is unknown, and the tests count
/// outcomes exactly; a loaded test machine must not make them guess (the
/// production default, 500 ms, is for a relay's hot path). The tests of
/// timeouts themselves (`redis_faults.rs`) set their own.
const TEST_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The configured servers: standalone and cluster, each if configured.
pub fn targets() -> Vec<Target> {
    let mut found = Vec::new();
    match std::env::var("REDIS_URL") {
        Ok(url) => found.push(Target {
            name: "standalone",
            options: RedisOptions::standalone(&url).call_timeout(TEST_CALL_TIMEOUT),
        }),
        Err(_) => missing("REDIS_URL"),
    }
    match std::env::var("REDIS_CLUSTER_URLS") {
        Ok(urls) => {
            let seeds: Vec<&str> = urls.split(',').filter(|s| !s.is_empty()).collect();
            found.push(Target {
                name: "cluster",
                options: RedisOptions::cluster(&seeds).call_timeout(TEST_CALL_TIMEOUT),
            });
        }
        Err(_) => missing("REDIS_CLUSTER_URLS"),
    }
    found
}

/// The cluster whose masters each have a replica
/// (`REDIS_REPLICATED_URLS`), with writes waiting for one replica
/// (`wait_for_replicas(1)`, ADR 0062): the conformance suite runs there
/// too.
pub fn replicated_target() -> Target {
    let Ok(urls) = std::env::var("REDIS_REPLICATED_URLS") else {
        missing("REDIS_REPLICATED_URLS");
    };
    let seeds: Vec<&str> = urls.split(',').filter(|s| !s.is_empty()).collect();
    Target {
        name: "replicated",
        options: RedisOptions::cluster(&seeds)
            .call_timeout(TEST_CALL_TIMEOUT)
            .wait_for_replicas(1),
    }
}

/// The TLS server: its `rediss://` URL and the PEM of the authority that
/// issued its certificate (`REDIS_TLS_URL`, `REDIS_TLS_CA`).
pub fn tls_target() -> (String, Vec<u8>) {
    let (Ok(url), Ok(ca)) = (
        std::env::var("REDIS_TLS_URL"),
        std::env::var("REDIS_TLS_CA"),
    ) else {
        missing("REDIS_TLS_URL and REDIS_TLS_CA");
    };
    let pem = std::fs::read(&ca).unwrap_or_else(|e| panic!("REDIS_TLS_CA {ca}: {e}"));
    (url, pem)
}

fn missing(var: &str) -> ! {
    panic!("{var} is not set: {HOW}");
}

/// How a developer gets the servers the Redis tests need.
pub const HOW: &str = "run the tests with scripts/test, which installs redis-server where it is \
missing (apt-get install redis-server redis-tools openssl) and starts the servers on loopback; \
or start them with `eval \"$(scripts/redis-servers start)\"` before `cargo test`";

/// A namespace no other engine of this run uses: a fresh, empty store.
pub fn fresh_namespace(test: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "t-{test}-{}-{nanos:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The limits the tests start from: a TTL unit of 10 ms upward.
pub fn config() -> StoreConfig {
    StoreConfig::default()
        .ttl_min(Duration::from_millis(10))
        .tombstone_ttl(Duration::from_secs(30))
        .listings_per_lease_max(3)
        .attempts_per_listing_max(2)
        .locks_per_lease_max(2)
        .presence_per_lease_max(2)
        .endpoints_per_lease_max(2)
        .replay_grace(Duration::from_secs(1))
}

/// A fresh engine on `target` (a namespace of its own), or the connect
/// error.
pub async fn connect_fresh(
    target: &Target,
    namespace: &str,
    config: StoreConfig,
) -> Result<RedisEngine, Error> {
    RedisEngine::connect(target.options.clone().namespace(namespace), config).await
}

/// Runs `f` to completion on a tokio runtime with I/O and timers.
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(f)
}

/// Runs `check` on every configured server, with the test's name and
/// the server's kind (`<test>-standalone`, `<test>-cluster`).
pub fn on_every_target<F, Fut>(test: &str, check: F)
where
    F: Fn(Target, String) -> Fut,
    Fut: Future<Output = ()>,
{
    for target in targets() {
        let name = format!("{test}-{}", target.name);
        block_on(check(target, name));
    }
}

/// `count` engine handles (relay instances, each with connections of its
/// own) on one fresh store of `target`.
pub async fn instances(
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

/// As [`instances`], with no sweeper loop within a test (its first pass
/// waits a minute): only the test's own `sweep()` calls sweep. A test that
/// counts room right after its `sweep()` needs this: on a cluster a
/// background pass that buried records first gives their room back in a
/// later call of its own, which may not have run yet.
pub async fn instances_swept_by_hand(
    target: &Target,
    test: &str,
    count: usize,
    config: StoreConfig,
) -> Vec<RedisEngine> {
    let target = Target {
        name: target.name,
        options: target
            .options
            .clone()
            .sweep_interval(Duration::from_secs(60)),
    };
    instances(&target, test, count, config).await
}

/// A plain connection to `target` (the cluster's, routing by key), for a
/// test that must reach under the engine.
#[derive(Clone)]
pub enum Raw {
    One(::redis::aio::MultiplexedConnection),
    Many(::redis::cluster_async::ClusterConnection),
}

impl Raw {
    pub async fn connect(target: &Target) -> Raw {
        match &target.options.target {
            relaystore::redis::RedisTarget::Standalone(url) => Raw::One(
                ::redis::Client::open(url.as_str())
                    .expect("a client")
                    .get_multiplexed_async_connection()
                    .await
                    .expect("a connection"),
            ),
            relaystore::redis::RedisTarget::Cluster(seeds) => Raw::Many(
                ::redis::cluster::ClusterClient::new(seeds.clone())
                    .expect("a cluster client")
                    .get_async_connection()
                    .await
                    .expect("a cluster connection"),
            ),
        }
    }

    /// Runs one command.
    pub async fn query<T: ::redis::FromRedisValue>(&mut self, cmd: &::redis::Cmd) -> T {
        match self {
            Raw::One(c) => cmd.query_async(c).await.expect("a command"),
            Raw::Many(c) => cmd.query_async(c).await.expect("a command"),
        }
    }
}
