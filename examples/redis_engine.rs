//! What the Redis engine's transitions cost, next to two floors on the
//! same server at the same number of requests in flight, and next to the
//! in-memory store:
//!
//! - **scripted**: a Redis Function that makes only the reads every
//!   transition on one record makes, nothing else: `TIME`, the tenant's
//!   incarnation hash (five fields, as every call's `begin`) and the
//!   record's hash (three fields, as `get_lease`), called with `FCALL`
//!   through the same client crate on one multiplexed connection, with
//!   arguments of the engine's shape. A transition's ratio to it (target
//!   ≥ 0.7) is what its own logic and writes cost; a row of several calls
//!   (join, job) counts each call, so it compares per call.
//! - **SET PX**: Redis's own `redis-benchmark` doing `SET key value PX
//!   ttl` (target ≥ 0.5): what the server does for the least a relay
//!   could ask of it, with the fastest client.
//!
//! For each depth (1, 8 and 64 requests in flight on one connection, as one
//! relay instance's engine handle pipelines them) it runs `grant`, `renew`,
//! `get_lease`, the join trio (`begin_join`, `bind_endpoint`, `consume`)
//! `notify` (a listener of each tenant's channel attached, on another
//! handle), `append` (64 bytes to a stream that trims its oldest entries),
//! `tx` (a transaction of two such appends and a notify: one call, counted
//! as three changes),
//! `read` (16 entries of 64 bytes), `job` (enqueue, claim, ack: three
//! operations) and `health` (on one server, one call of the library's
//! `writable` function, which only answers: the client side and the
//! smallest function call) for `--seconds`
//! each, then the scripted floor for `--seconds` and `redis-benchmark -c 1
//! -P <depth>`, and prints ops/s and the ratios to both floors. Then, at
//! 64 in flight, each operation's server time, function calls and
//! commands per operation from `INFO commandstats` (reset before each row;
//! the stats of the whole server, so run it on a server nothing else
//! uses), beside the scripted floor's call and a `SET PX`; that table
//! also has a record of a declared kind under a lease (`record`: put,
//! refreshing it; `get_record`) beside a member attached to the lease,
//! the built-in kind of the same shape (`heartbeat`, `get_member`).
//! Runs only when `REDIS_URL` is set; `redis-benchmark` must be on PATH.
//! Keys go under a namespace of their own; the floors write
//! `relaystore-floor:*` keys (the SET PX ones with a one-minute expiry,
//! the scripted floor's deleted at the end, with its function library).
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
use relaystore::{LeaseId, RecordKind, Store, StoreConfig, TenantId, TenantQuota, TxBatch};
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
/// The declared kind the record rows put and read.
const KIND: &str = "permission";
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
        .tenant(TenantQuota::default().replay_max(replay))
        .declare(RecordKind::new(KIND).ttl_max(TTL));
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
            engine
                .append(tenant, LOG, &ENTRY, None)
                .await
                .expect("append");
            store.append(tenant, LOG, &ENTRY, None).expect("append");
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
    let scripted = ScriptedFloor::new(url, o.sessions, &namespace).await;
    println!(
        "{:>5}  {:>10}  {:>12}  {:>12}  {:>8}  {:>12}  {:>8}  {:>12}",
        "depth", "op", "engine/s", "scripted/s", "ratio", "SET PX/s", "ratio", "in-memory/s"
    );
    for depth in DEPTHS {
        let floor = floor(&host, port, depth);
        let script = scripted.measure(depth, seconds).await;
        for op in [
            "grant",
            "renew",
            "get_lease",
            "join",
            "notify",
            "append",
            "tx",
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
                "{depth:>5}  {op:>10}  {remote:>12.0}  {script:>12.0}  {:>8.2}  {floor:>12}  {ratio:>8}  {memory:>12.0}",
                remote / script
            );
        }
    }
    // What one function call costs the server, whatever it does: the
    // scripted floor and SET PX with the fastest client, 64 pipelined.
    let fcall = scripted.command();
    let fcall: Vec<&str> = fcall.iter().map(String::as_str).collect();
    if let (Some(call), Some(set)) = (
        redis_benchmark(&host, port, 64, &fcall),
        floor(&host, port, 64),
    ) {
        println!(
            "server-bound (redis-benchmark -P 64): the scripted floor {call:.0} calls/s, SET PX {set:.0}/s: one function call costs the server {:.1} SETs",
            set / call
        );
    }
    server_cost(url, &engine, &ids, &scripted, seconds, (&host, port)).await;
    scripted.remove().await;
    wake_latency(&engine, &other).await;
    drop(listeners);
}

/// The scripted floor's library: one function that makes the reads every
/// transition on one record makes (the clock, the tenant's incarnation
/// hash as `begin` reads it, the record's hash as `get_lease` reads it)
/// and answers as `get_lease` does; it writes nothing.
const FLOOR_LIBRARY: &str = r#"#!lua name=relaystore_bench_floor
redis.register_function{
  function_name = 'relaystore_bench_floor',
  flags = {'no-writes'},
  callback = function(keys, args)
    local t = redis.call('TIME')
    local now = math.floor((tonumber(t[1]) * 1000000 + tonumber(t[2])) / 1000)
    local inc = redis.call('HMGET', keys[1], 'i', 'e', 'rv', 'ru', 'b')
    if inc[1] ~= args[1] then
      return {9}
    end
    local l = redis.call('HMGET', keys[2], 'd', 'x', 'h', 'v', 'd')
    if not l[1] or l[2] then
      return {1}
    end
    return {0, l[3], tonumber(l[4]), tonumber(l[5]) - now}
  end,
}
"#;
const FLOOR_FUNCTION: &str = "relaystore_bench_floor";
/// The incarnation the floor's records carry (16 hex digits, as the
/// engine's).
const FLOOR_INCARNATION: &str = "0123456789abcdef";

/// The scripted floor: its function loaded, `records` records of the
/// shape the engine keeps for a lease, and a connection to call it on.
struct ScriptedFloor {
    conn: redis::aio::MultiplexedConnection,
    tag: String,
    records: u64,
}

impl ScriptedFloor {
    async fn new(url: &str, records: u64, namespace: &str) -> ScriptedFloor {
        let client = redis::Client::open(url).expect("REDIS_URL");
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect to REDIS_URL");
        let tag = format!("relaystore-floor:{{{namespace}}}:");
        let _: String = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(FLOOR_LIBRARY)
            .query_async(&mut conn)
            .await
            .expect("FUNCTION LOAD");
        let _: () = redis::cmd("HSET")
            .arg(format!("{tag}inc"))
            .arg(&["i", FLOOR_INCARNATION, "e", "0"])
            .query_async(&mut conn)
            .await
            .expect("HSET");
        let deadline = (u64::MAX >> 12).to_string();
        for chunk in (0..records).collect::<Vec<_>>().chunks(1_000) {
            let mut pipe = redis::pipe();
            for i in chunk {
                pipe.cmd("HSET")
                    .arg(format!("{tag}l:{i}"))
                    .arg(&["d", &deadline, "h", "h", "v", "1", "z", "0"])
                    .ignore();
            }
            let _: () = pipe.query_async(&mut conn).await.expect("HSET");
        }
        ScriptedFloor { conn, tag, records }
    }

    /// The floor's call on its first record, as command-line words.
    fn command(&self) -> Vec<String> {
        [
            "FCALL",
            FLOOR_FUNCTION,
            "2",
            &format!("{}inc", self.tag),
            &format!("{}l:0", self.tag),
            FLOOR_INCARNATION,
            "r0123456789abcdef/0",
            "0",
        ]
        .map(String::from)
        .to_vec()
    }

    /// Calls per second with `depth` in flight for `span`.
    async fn measure(&self, depth: usize, span: Duration) -> f64 {
        let (conn, tag, records) = (self.conn.clone(), self.tag.clone(), self.records);
        measure(depth, span, move |k| {
            let (mut conn, tag) = (conn.clone(), tag.clone());
            async move {
                let seq = k % records;
                let reply: redis::RedisResult<Vec<redis::Value>> = redis::cmd("FCALL")
                    .arg(FLOOR_FUNCTION)
                    .arg(2)
                    .arg(format!("{tag}inc"))
                    .arg(format!("{tag}l:{seq}"))
                    .arg(FLOOR_INCARNATION)
                    .arg(format!("r0123456789abcdef/{seq}"))
                    .arg(seq)
                    .query_async(&mut conn)
                    .await;
                match reply.as_deref() {
                    Ok([redis::Value::Int(0), ..]) => 1,
                    _ => 0,
                }
            }
        })
        .await
    }

    /// Deletes the floor's records and its function library.
    async fn remove(mut self) {
        for chunk in (0..self.records).collect::<Vec<_>>().chunks(1_000) {
            let keys: Vec<String> = chunk.iter().map(|i| format!("{}l:{i}", self.tag)).collect();
            let _: () = redis::cmd("UNLINK")
                .arg(keys)
                .query_async(&mut self.conn)
                .await
                .expect("UNLINK");
        }
        let _: () = redis::cmd("UNLINK")
            .arg(format!("{}inc", self.tag))
            .query_async(&mut self.conn)
            .await
            .expect("UNLINK");
        let _: () = redis::cmd("FUNCTION")
            .arg("DELETE")
            .arg("relaystore_bench_floor")
            .query_async(&mut self.conn)
            .await
            .expect("FUNCTION DELETE");
    }
}

/// What each operation costs the server, as `INFO commandstats` counts it
/// (reset before each row, read after it): its functions' time per
/// operation and the commands they ran, at 64 in flight for `span` each;
/// beside the scripted floor's call and a `SET PX`. The server's own time,
/// so a client sharing its cores does not move it.
async fn server_cost(
    url: &str,
    engine: &RedisEngine,
    ids: &Arc<Vec<(TenantId, LeaseId)>>,
    scripted: &ScriptedFloor,
    span: Duration,
    (host, port): (&str, u16),
) {
    let client = redis::Client::open(url).expect("REDIS_URL");
    let mut admin = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to REDIS_URL");
    println!(
        "server time per operation (INFO commandstats, 64 in flight, {}s a row)",
        span.as_secs()
    );
    println!(
        "{:>12}  {:>10}  {:>10}  {:>10}  {:>14}",
        "op", "µs/op", "calls/op", "cmds/op", "over floor"
    );
    // The floor's time and commands per call.
    let (scripted_call, scripted_commands) = {
        reset_stats(&mut admin).await;
        scripted.measure(64, span).await;
        let stats = command_stats(&mut admin).await;
        let calls = stats.fcalls.max(1.0);
        (stats.fcall_usec / calls, stats.inner_calls / calls)
    };
    for op in [
        "heartbeat",
        "get_member",
        "record",
        "get_record",
        "lookup",
        "get_lease",
        "renew",
        "grant",
        "join",
        "append",
        "job",
    ] {
        reset_stats(&mut admin).await;
        let (e, ids) = (engine.clone(), Arc::clone(ids));
        let rate = measure(64, span, move |k| {
            let (e, ids) = (e.clone(), Arc::clone(&ids));
            async move { one_remote(&e, &ids, op, k).await }
        })
        .await;
        let stats = command_stats(&mut admin).await;
        let ops = (rate * span.as_secs_f64()).max(1.0);
        let per_op = stats.fcall_usec / ops;
        println!(
            "{op:>12}  {per_op:>10.1}  {:>10.2}  {:>10.1}  {:>14.2}",
            stats.fcalls / ops,
            stats.inner_calls / ops,
            per_op / scripted_call,
        );
    }
    let set = ["SET", "relaystore-floor:__rand_int__", "v", "PX", "60000"];
    reset_stats(&mut admin).await;
    let set_usec = match redis_benchmark(host, port, 64, &set) {
        Some(_) => command_stats(&mut admin)
            .await
            .usec_per_call
            .get("set")
            .copied(),
        None => None,
    };
    println!(
        "{:>12}  {scripted_call:>10.1}  {:>10.2}  {scripted_commands:>10.1}  {:>14.2}",
        "scripted", 1.0, 1.0
    );
    if let Some(set) = set_usec {
        println!(
            "{:>12}  {set:>10.1}  (one command, redis-benchmark)",
            "SET PX"
        );
    }
}

/// What `INFO commandstats` says since its last reset.
struct CommandStats {
    /// Microseconds in `FCALL` (the functions' whole time, their commands
    /// included).
    fcall_usec: f64,
    fcalls: f64,
    /// Commands other than `FCALL`: the ones functions ran.
    inner_calls: f64,
    usec_per_call: std::collections::HashMap<String, f64>,
}

async fn reset_stats(admin: &mut redis::aio::MultiplexedConnection) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(admin)
        .await
        .expect("CONFIG RESETSTAT");
}

async fn command_stats(admin: &mut redis::aio::MultiplexedConnection) -> CommandStats {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(admin)
        .await
        .expect("INFO commandstats");
    let mut stats = CommandStats {
        fcall_usec: 0.0,
        fcalls: 0.0,
        inner_calls: 0.0,
        usec_per_call: Default::default(),
    };
    for line in info.lines() {
        let Some((name, fields)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let field = |key: &str| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let (calls, usec) = (field("calls"), field("usec"));
        stats
            .usec_per_call
            .insert(name.to_owned(), field("usec_per_call"));
        match name {
            "fcall" | "fcall_ro" => {
                stats.fcall_usec += usec;
                stats.fcalls += calls;
            }
            "info" | "config|resetstat" => {}
            _ => stats.inner_calls += calls,
        }
    }
    stats
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
            let consumed = e.consume(tenant, &t.token, None).await;
            return 3 * u64::from(bound.is_ok() && consumed.is_ok());
        }
        "renew" => e.renew(tenant, id, TTL).await.is_ok(),
        // A member of the lease, refreshed (created by its first call).
        "heartbeat" => {
            let member = format!("m{}", k as usize % ids.len());
            e.heartbeat(tenant, &member, TTL, None, Some(id))
                .await
                .is_ok()
        }
        "get_member" => {
            let member = format!("m{}", k as usize % ids.len());
            e.get_presence(tenant, &member).await.is_ok()
        }
        // A record of a declared kind under the lease, the same shape as
        // the heartbeat's member: put (created by its first call), read.
        "record" | "get_record" => {
            let name = format!("m{}", k as usize % ids.len());
            let kind = e.kind(KIND).expect("the declared kind");
            if op == "record" {
                e.put_record(tenant, kind, id, &name, TTL, None)
                    .await
                    .is_ok()
            } else {
                e.get_record(tenant, kind, id, &name).await.is_ok()
            }
        }
        "lookup" => e.get_listing(tenant, LOBBY).await.is_ok(),
        "notify" => e.notify(tenant, LOBBY).await.is_ok(),
        "health" => e.health().await == relaystore::Health::Ready,
        "append" => e.append(tenant, FEED, &ENTRY, None).await.is_ok(),
        "tx" => return 3 * u64::from(e.commit_tx(feed_batch(tenant)).await.is_ok()),
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
            let consumed = s.consume(tenant, &t.token, None);
            return 3 * u64::from(bound.is_ok() && consumed.is_ok());
        }
        "renew" => s.renew(tenant, id, TTL).is_ok(),
        "notify" => s.notify(tenant, LOBBY).is_ok(),
        "health" => s.health() == relaystore::Health::Ready,
        "append" => s.append(tenant, FEED, &ENTRY, None).is_ok(),
        "tx" => return 3 * u64::from(s.commit_tx(feed_batch(tenant)).is_ok()),
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
    let set = ["SET", "relaystore-floor:__rand_int__", "v", "PX", "60000"];
    redis_benchmark(host, port, depth, &set)
}

/// `redis-benchmark`'s rate for `command` on one connection with `depth`
/// requests pipelined; `None` if it is not installed.
fn redis_benchmark(host: &str, port: u16, depth: usize, command: &[&str]) -> Option<f64> {
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
        .args(command)
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

/// A transaction of three changes, each counted: two appends and a
/// notify.
fn feed_batch(tenant: TenantId) -> TxBatch {
    let mut tx = TxBatch::new(tenant);
    tx.append(FEED, &ENTRY).expect("staged");
    tx.append(FEED, &ENTRY).expect("staged");
    tx.notify(LOBBY).expect("staged");
    tx
}
