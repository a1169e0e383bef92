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
//!
//! With `--baseline` (standalone only) the same sessions and mix first run
//! as a relay engineer would write them with plain Redis commands and no
//! Lua ([`Plain`]), on the same server, and the two are printed side by
//! side per Redis CPU-second, the figure that sizes a Redis fleet.

use super::{
    listing, pick, print_table, run_mix_rates, Failure, Op, Tally, LEASE_TTL, MEMBERS,
    PRESENCE_TTL, TENANTS, VANISH_TTL,
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
    lease: Mutex<Held>,
}

/// A session's lease as each subject names it.
#[derive(Clone, Copy)]
enum Held {
    Engine(LeaseId),
    /// The plain run's lease number (its key is `<ns>:l:<n>`).
    Plain(u64),
}

/// What the mix runs on: the Redis engine, or the same relay written
/// with plain commands.
#[derive(Clone)]
enum Remote {
    Engine(RedisEngine),
    Plain(Plain),
}

/// The relay's state as plain Redis keys, each with its expiry, changed
/// by the commands a relay engineer reaches for without Lua: `SET .. PX`
/// (`NX`, `XX`), `PEXPIRE`, `GET`, `GETDEL`, `DEL`, `INCR` for lease
/// numbers. Keys: `<ns>:l:<n>` a lease (its holder), `<ns>:p:<tenant>:<key>`
/// a listing (its attributes, expiring with its lease), `<ns>:m:<tenant>:<member>`
/// a member, `<ns>:a:<token>` a join attempt. What it leaves out is what
/// the engine adds: per-tenant and store-wide limits, versions and fences
/// checked in the same step, cascade on revoke, replay memory after a
/// consume, removal events, restart detection.
#[derive(Clone)]
struct Plain {
    conn: redis::aio::MultiplexedConnection,
    ns: String,
}

impl From<redis::RedisError> for Failure {
    fn from(_: redis::RedisError) -> Self {
        Failure::Failed
    }
}

/// What one run on Redis measured, for the side-by-side summary.
struct Summary {
    name: &'static str,
    mix_per_s: f64,
    /// Mix operations per second of the server's CPU (standalone).
    mix_per_cpu_s: Option<f64>,
    memory_per_session: Option<f64>,
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
    let baseline = o.baseline == Some(true);
    if baseline && cluster {
        return Err("--baseline on Redis runs on a standalone server (REDIS_URL) only".into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.threads)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let namespace = format!("capacity-{}", std::process::id());
        let plain = if baseline {
            let client = redis::Client::open(var.as_str())?;
            let plain = Plain {
                conn: client.get_multiplexed_async_connection().await?,
                ns: format!("{namespace}-plain"),
            };
            let ran = mix(o, Remote::Plain(plain.clone()), &var, cluster).await?;
            plain.remove().await?;
            Some(ran)
        } else {
            None
        };
        let options = options
            .namespace(&namespace)
            .call_timeout(Duration::from_secs(2));
        let engine = RedisEngine::connect(options, config).await?;
        let ours = mix(o, Remote::Engine(engine), &var, cluster).await?;
        if let Some(theirs) = plain {
            compare(&ours, &theirs);
        }
        Ok(())
    })
}

/// The engine beside the plain commands: per Redis CPU-second (target
/// ≥ 0.5x), per second of wall time, and memory per session.
fn compare(ours: &Summary, theirs: &Summary) {
    println!();
    println!(
        "{:<34}{:>16}{:>16}{:>9}",
        "side by side", ours.name, theirs.name, "ratio"
    );
    let row = |what: &str, a: Option<f64>, b: Option<f64>| {
        let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        let ratio = match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".to_string(),
        };
        println!("{what:<34}{:>16}{:>16}{ratio:>9}", cell(a), cell(b));
    };
    row(
        "mix ops per Redis CPU-second",
        ours.mix_per_cpu_s,
        theirs.mix_per_cpu_s,
    );
    row("mix ops/s", Some(ours.mix_per_s), Some(theirs.mix_per_s));
    row(
        "Redis bytes per session",
        ours.memory_per_session,
        theirs.memory_per_session,
    );
    println!("  (target: the engine at >= 0.5x the plain commands' mix ops per Redis CPU-second)");
}

async fn mix(
    o: &Options,
    remote: Remote,
    target: &str,
    cluster: bool,
) -> Result<Summary, Box<dyn std::error::Error>> {
    let n = o.sessions;
    let server = if cluster {
        None
    } else {
        Some(redis::Client::open(target)?)
    };
    let what = match &remote {
        Remote::Engine(_) => "relaystore capacity run on the Redis engine",
        Remote::Plain(_) => {
            "the same run with plain Redis commands (SET PX NX/XX, PEXPIRE, GET, GETDEL, DEL, INCR; no Lua)"
        }
    };
    println!(
        "{what} ({target}): {n} sessions ({TENANTS} tenants, {MEMBERS} members each), {IN_FLIGHT} requests in flight over {} threads, {} s",
        o.threads, o.seconds
    );
    let memory_before = server_info(&server, "used_memory").await;
    let setup = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let mut hosts = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let (remote, next) = (remote.clone(), Arc::clone(&next));
        hosts.spawn(async move {
            let mut hosted = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, Failure>(hosted);
                }
                hosted.push((i, remote.host(i).await?));
            }
        });
    }
    let mut leases = vec![None; n as usize];
    while let Some(hosted) = hosts.join_next().await {
        let hosted = hosted?.map_err(|e| format!("hosting failed: {e:?}"))?;
        for (i, lease) in hosted {
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
    // The plain commands announce no removals: no lag to measure.
    let events = match &remote {
        Remote::Engine(engine) => Some(engine.subscribe_to(&[Collection::Presence]).await?),
        Remote::Plain(_) => None,
    };
    let deadlines: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let reading = Arc::new(AtomicBool::new(true));
    let reader = events.map(|events| {
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
    });

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let cpu_before = server_cpu(&server).await;
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..IN_FLIGHT {
        let (remote, sessions, stop, done, deadlines) = (
            remote.clone(),
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
                let result = remote.perform(&sessions, op, i, x, &mut vanishing).await;
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
    let lag = match reader {
        Some(reader) => {
            // Members that vanished in the last second expire now: keep reading.
            tokio::time::sleep(VANISH_TTL + Duration::from_millis(400)).await;
            reading.store(false, Ordering::Relaxed);
            Some(reader.await?)
        }
        None => None,
    };
    let (mix_total, store_ops_total, _) = print_table(
        &tally.hist,
        &tally.counts,
        &tally.failures,
        &tally.refusals,
        elapsed,
    );
    let total_rate: f64 = run_mix_rates().iter().map(|m| m.1).sum();
    let gib = (1u64 << 30) as f64;
    match memory_per_session {
        Some(bytes) => println!(
            "memory: {bytes:.0} bytes of Redis memory per session (used_memory, at setup) = {:.0} sessions per GiB",
            gib / bytes
        ),
        None => println!("memory: not measured on a cluster (add up the primaries' used_memory)"),
    }
    let mix_per_cpu_s = cpu_used
        .filter(|cpu| *cpu > 0.0)
        .map(|cpu| mix_total as f64 / cpu);
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
    match lag {
        Some(lag) => {
            let ms = |q| lag.quantile(q) as f64 / 1e6;
            println!(
                "expiry lag over {} vanished members: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                lag.count(),
                ms(0.5),
                ms(0.99),
                ms(1.0)
            );
            println!("  (from a member's deadline to its removal event reaching a subscriber; the sweeper looks every 100 ms)");
        }
        None => println!("expiry lag: not measured (plain keys expire without announcing it)"),
    }
    println!();
    Ok(Summary {
        name: match remote {
            Remote::Engine(_) => "engine",
            Remote::Plain(_) => "plain commands",
        },
        mix_per_s: mix_total as f64 / elapsed,
        mix_per_cpu_s,
        memory_per_session,
    })
}

impl Remote {
    /// Hosts session `i`: its lease, listing and members.
    async fn host(&self, i: u64) -> Result<Held, Failure> {
        let tenant = TenantId(i % TENANTS);
        match self {
            Remote::Engine(e) => {
                let lease = e
                    .grant(tenant, &format!("host-{i}"), LEASE_TTL, None)
                    .await?;
                e.publish(tenant, lease.id, &listing(i), b"mode=ffa;slots=8", None)
                    .await?;
                for m in 0..MEMBERS {
                    e.heartbeat(tenant, &format!("s{i}-m{m}"), PRESENCE_TTL, None, None)
                        .await?;
                }
                Ok(Held::Engine(lease.id))
            }
            Remote::Plain(p) => {
                let lease = p.grant(&format!("host-{i}")).await?;
                p.publish(tenant, &listing(i), b"mode=ffa;slots=8").await?;
                for m in 0..MEMBERS {
                    p.heartbeat(tenant, &format!("s{i}-m{m}"), PRESENCE_TTL)
                        .await?;
                }
                Ok(Held::Plain(lease))
            }
        }
    }

    /// One operation of the mix.
    async fn perform(
        &self,
        sessions: &[Session],
        op: Op,
        i: u64,
        x: u64,
        vanishing: &mut Vanishing,
    ) -> Result<(), Failure> {
        match self {
            Remote::Engine(e) => Ok(perform(e, sessions, op, i, x, vanishing).await?),
            Remote::Plain(p) => p.perform(sessions, op, i, x, vanishing).await,
        }
    }
}

impl Plain {
    fn lease_key(&self, n: u64) -> String {
        format!("{}:l:{n}", self.ns)
    }

    fn listing_key(&self, tenant: TenantId, key: &str) -> String {
        format!("{}:p:{}:{key}", self.ns, tenant.0)
    }

    fn member_key(&self, tenant: TenantId, member: &str) -> String {
        format!("{}:m:{}:{member}", self.ns, tenant.0)
    }

    /// A new lease: a number from a counter, then its key with its TTL.
    async fn grant(&self, holder: &str) -> Result<u64, Failure> {
        let mut c = self.conn.clone();
        let n: u64 = redis::cmd("INCR")
            .arg(format!("{}:ctr", self.ns))
            .query_async(&mut c)
            .await?;
        let _: () = redis::cmd("SET")
            .arg(self.lease_key(n))
            .arg(holder)
            .arg("PX")
            .arg(LEASE_TTL.as_millis() as u64)
            .query_async(&mut c)
            .await?;
        Ok(n)
    }

    async fn publish(&self, tenant: TenantId, key: &str, attrs: &[u8]) -> Result<(), Failure> {
        let _: () = redis::cmd("SET")
            .arg(self.listing_key(tenant, key))
            .arg(attrs)
            .arg("PX")
            .arg(LEASE_TTL.as_millis() as u64)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    async fn heartbeat(
        &self,
        tenant: TenantId,
        member: &str,
        ttl: Duration,
    ) -> Result<(), Failure> {
        let _: () = redis::cmd("SET")
            .arg(self.member_key(tenant, member))
            .arg("")
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// [`perform`] with plain commands: a heartbeat is one `SET PX`, a
    /// lookup one `GET`, a join `SET PX NX` (begin), `SET XX KEEPTTL`
    /// (bind) and `GETDEL` (consume, so a token is used once), a refresh
    /// `PEXPIRE` of the lease and its listing (one round trip), a churn
    /// `DEL` of the old lease, a grant and a publish.
    async fn perform(
        &self,
        sessions: &[Session],
        op: Op,
        i: u64,
        x: u64,
        vanishing: &mut Vanishing,
    ) -> Result<(), Failure> {
        let s = &sessions[i as usize];
        let mut c = self.conn.clone();
        match op {
            Op::Heartbeat => {
                self.heartbeat(s.tenant, &format!("s{i}-m{}", x % MEMBERS), PRESENCE_TTL)
                    .await
            }
            Op::Lookup => {
                let seen: Option<Vec<u8>> = redis::cmd("GET")
                    .arg(self.listing_key(s.tenant, &listing(i)))
                    .query_async(&mut c)
                    .await?;
                seen.map(drop).ok_or(Failure::Failed)
            }
            Op::Join => {
                let token = format!("{}:a:{:016x}{:016x}", self.ns, x, rand_word(x));
                let begun: Option<String> = redis::cmd("SET")
                    .arg(&token)
                    .arg(listing(i))
                    .arg("PX")
                    .arg(10_000)
                    .arg("NX")
                    .query_async(&mut c)
                    .await?;
                begun.ok_or(Failure::Failed)?;
                let addr = format!("{}|203.0.113.{}:40000", listing(i), x % 250);
                let bound: Option<String> = redis::cmd("SET")
                    .arg(&token)
                    .arg(addr)
                    .arg("XX")
                    .arg("KEEPTTL")
                    .query_async(&mut c)
                    .await?;
                bound.ok_or(Failure::Failed)?;
                let consumed: Option<String> =
                    redis::cmd("GETDEL").arg(&token).query_async(&mut c).await?;
                consumed.map(drop).ok_or(Failure::Failed)
            }
            Op::Refresh => {
                let Held::Plain(lease) = *s.lease.lock().unwrap() else {
                    unreachable!("a plain run's sessions hold plain leases")
                };
                let ttl = LEASE_TTL.as_millis() as u64;
                let (a, b): (bool, bool) = redis::pipe()
                    .cmd("PEXPIRE")
                    .arg(self.lease_key(lease))
                    .arg(ttl)
                    .cmd("PEXPIRE")
                    .arg(self.listing_key(s.tenant, &listing(i)))
                    .arg(ttl)
                    .query_async(&mut c)
                    .await?;
                (a && b).then_some(()).ok_or(Failure::Failed)
            }
            Op::Churn => {
                let Held::Plain(old) = *s.lease.lock().unwrap() else {
                    unreachable!("a plain run's sessions hold plain leases")
                };
                let _: () = redis::cmd("DEL")
                    .arg(self.lease_key(old))
                    .query_async(&mut c)
                    .await?;
                let lease = self.grant("host").await?;
                *s.lease.lock().unwrap() = Held::Plain(lease);
                self.publish(s.tenant, &listing(i), b"mode=ffa").await
            }
            Op::Vanish => {
                vanishing.made += 1;
                let member = format!("gone-{}-{}", vanishing.worker, vanishing.made);
                self.heartbeat(s.tenant, &member, VANISH_TTL).await
            }
        }
    }

    /// Deletes the run's keys, so the engine's run that follows meets a
    /// server as it found it.
    async fn remove(&self) -> Result<(), redis::RedisError> {
        let mut c = self.conn.clone();
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{}:*", self.ns))
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut c)
                .await?;
            if !keys.is_empty() {
                let _: () = redis::cmd("UNLINK").arg(keys).query_async(&mut c).await?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}

/// A second 64-bit word for a join token, from the worker's draw.
fn rand_word(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 31)
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
            e.consume(s.tenant, &ticket.token, None).await.map(drop)
        }
        Op::Refresh => {
            let lease = engine_lease(s);
            e.renew(s.tenant, lease, LEASE_TTL).await.map(drop)
        }
        Op::Churn => {
            let old = engine_lease(s);
            let _ = e.revoke(s.tenant, old).await;
            let id = e.grant(s.tenant, "host", LEASE_TTL, None).await?.id;
            *s.lease.lock().unwrap() = Held::Engine(id);
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

fn engine_lease(s: &Session) -> LeaseId {
    match *s.lease.lock().unwrap() {
        Held::Engine(id) => id,
        Held::Plain(_) => unreachable!("an engine run's sessions hold the engine's leases"),
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
