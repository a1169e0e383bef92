//! Capacity run: a relay workload on the embedded store, with the system
//! clock and the real background expiry driver.
//!
//! ```text
//! cargo run --release --example capacity -- [--sessions N] [--seconds S] [--threads T]
//! ```
//!
//! `N` hosted sessions, each a host lease (TURN-style: 600 s allocation,
//! refreshed every 300 s), a published listing and 4 members' presence
//! (heartbeat every 5 s, 15 s TTL), spread over 16 tenants. `T` threads then
//! run, as fast as they can for `S` seconds, the operation mix a relay sees
//! per session per second:
//!
//! | per session per second | operation |
//! | --- | --- |
//! | 0.8 | presence heartbeat (4 members / 5 s) |
//! | 0.2 | listing lookup (matchmaking) |
//! | 1/30 | a join: begin_join, bind_endpoint, consume |
//! | 1/300 | lease refresh |
//! | 1/600 | session churn: revoke (cascading), grant, publish |
//! | 1/60 | a member vanishes: heartbeat with a 1 s TTL, never renewed |
//!
//! It reports throughput and latency per operation (one operation in 16 is
//! timed), heap bytes per session (a counting allocator), expiry lag
//! (deadline to the removal event, from the vanished members), and how many
//! sessions one core carries at the rates above.
//!
//! With `--open-loop RATE` the threads offer a fixed `RATE` mix operations
//! per second instead: every operation is timed, from the moment it was
//! due rather than the moment it started, so a store that falls behind
//! shows its queueing in the latencies (a closed loop hides it: a slow
//! operation delays the next one's start, not its measured latency).

#[path = "support/mod.rs"]
mod support;

use cap::Cap;
use relaystore::events::{Cause, Collection, Received, RecordId, RecvError};
use relaystore::time::SystemClock;
use relaystore::{ExpiryDriver, LeaseId, Store, StoreConfig, TenantId, TenantQuota};
use std::alloc::System;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{cpu_time, max_resident_bytes, micros, options, Histogram, Options};

/// Counts live heap bytes, to report memory per session.
#[global_allocator]
static HEAP: Cap<System> = Cap::new(System, usize::MAX);

fn heap_bytes() -> i64 {
    HEAP.allocated() as i64
}

const TENANTS: u64 = 16;
const MEMBERS: u64 = 4;
const LEASE_TTL: Duration = Duration::from_secs(600);
const PRESENCE_TTL: Duration = Duration::from_secs(15);
const VANISH_TTL: Duration = Duration::from_secs(1);
const SAMPLE_EVERY: u64 = 16;

const USAGE: &str =
    "usage: cargo run --release --example capacity -- [--sessions N] [--seconds S] [--threads T] [--json PATH] [--open-loop R]

  --sessions N   hosted sessions (default 20000)
  --seconds S    how long the load runs (default 15)
  --threads T    worker threads running the operation mix (default 2)
  --json PATH    also write the results as JSON to PATH (for dashboards and comparisons)
  --open-loop R  offer a fixed R mix operations per second (split over the threads) instead
                 of running as fast as the store answers; latency counts from each
                 operation's scheduled start, so queueing behind slow operations shows
  --engine E     memory (default: the embedded store), redis (the Redis engine on the server
                 at REDIS_URL) or redis-cluster (on the Redis Cluster at REDIS_CLUSTER_URLS,
                 comma-separated seeds); on Redis the mix runs with 64 requests in flight";

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Op {
    Heartbeat,
    Lookup,
    Join,
    Refresh,
    Churn,
    Vanish,
}

/// Per session per second, from the table in the module docs.
const MIX: [(Op, f64, &str); 6] = [
    (Op::Heartbeat, 0.8, "presence heartbeat"),
    (Op::Lookup, 0.2, "listing lookup"),
    (Op::Join, 1.0 / 30.0, "join (begin+bind+consume)"),
    (Op::Refresh, 1.0 / 300.0, "lease refresh"),
    (
        Op::Churn,
        1.0 / 600.0,
        "session churn (revoke+grant+publish)",
    ),
    (Op::Vanish, 1.0 / 60.0, "vanishing member"),
];

/// Store operations one mix entry performs.
fn store_ops(op: Op) -> u64 {
    match op {
        Op::Join | Op::Churn => 3,
        _ => 1,
    }
}

/// One hosted session's ids.
struct Session {
    tenant: TenantId,
    lease: Mutex<LeaseId>,
}

fn listing(i: u64) -> String {
    format!("lobby-{i}")
}

fn host(s: &Store, i: u64) -> Result<LeaseId, relaystore::Error> {
    let tenant = TenantId(i % TENANTS);
    let lease = s.grant(tenant, &format!("host-{i}"), LEASE_TTL, None)?;
    s.publish(tenant, lease.id, &listing(i), b"mode=ffa;slots=8", None)?;
    for m in 0..MEMBERS {
        s.heartbeat(tenant, &format!("s{i}-m{m}"), PRESENCE_TTL, None, None)?;
    }
    Ok(lease.id)
}

/// Draws the next operation of the mix and its session.
fn pick(x: &mut u64, sessions: u64) -> (Op, u64) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    let total_rate: f64 = MIX.iter().map(|m| m.1).sum();
    let mut roll = (*x >> 11) as f64 / (1u64 << 53) as f64 * total_rate;
    let op = MIX.iter().find(|m| {
        roll -= m.1;
        roll < 0.0
    });
    (op.map_or(Op::Heartbeat, |m| m.0), (*x >> 20) % sessions)
}

/// Sleeps until shortly before `due`, then spins to it: a sleep alone
/// overshoots by the timer slack (tens of µs), which an open-loop run
/// would count as the store's latency.
fn wait_until(due: Instant) {
    const SPIN: Duration = Duration::from_micros(200);
    let now = Instant::now();
    if due > now + SPIN {
        std::thread::sleep(due - now - SPIN);
    }
    while Instant::now() < due {
        std::hint::spin_loop();
    }
}

/// Prints the table of operations (throughput, latency, refusals, failures),
/// the whole mix, and the refusals by the limit that refused them. Returns
/// the mix operations, the store operations and the table as JSON rows.
fn print_table(
    hist: &HashMap<Op, Histogram>,
    counts: &HashMap<Op, u64>,
    failures: &HashMap<Op, u64>,
    refusals: &HashMap<(Op, String), u64>,
    elapsed: f64,
) -> (u64, u64, Vec<String>) {
    println!();
    println!(
        "{:<38}{:>10}{:>9}{:>9}{:>10}{:>9}{:>9}",
        "operation", "ops/s", "p50 µs", "p99 µs", "p99.9 µs", "refused", "failed"
    );
    let mut store_ops_total = 0;
    let mut rows = Vec::new();
    for (op, _, name) in MIX {
        let c = counts.get(&op).copied().unwrap_or(0);
        store_ops_total += c * store_ops(op);
        let h = &hist[&op];
        let refused: u64 = refusals
            .iter()
            .filter(|((o, _), _)| *o == op)
            .map(|(_, n)| n)
            .sum();
        let failed = failures.get(&op).copied().unwrap_or(0);
        println!(
            "{:<38}{:>10.0}{:>9}{:>9}{:>10}{:>9}{:>9}",
            name,
            c as f64 / elapsed,
            micros(h.quantile(0.5)),
            micros(h.quantile(0.99)),
            micros(h.quantile(0.999)),
            refused,
            failed
        );
        rows.push(format!(
            "{{\"operation\": {name:?}, \"ops_per_s\": {:.1}, \"p50_us\": {:.3}, \"p99_us\": {:.3}, \"p999_us\": {:.3}, \"refused\": {refused}, \"failed\": {failed}}}",
            c as f64 / elapsed,
            h.quantile(0.5) as f64 / 1e3,
            h.quantile(0.99) as f64 / 1e3,
            h.quantile(0.999) as f64 / 1e3,
        ));
    }
    let mix_total: u64 = counts.values().sum();
    let refused: u64 = refusals.values().sum();
    let failed: u64 = failures.values().sum();
    println!(
        "{:<38}{:>10.0}   ({:.0} store operations/s; {:.3}% refused, {:.3}% failed)",
        "all",
        mix_total as f64 / elapsed,
        store_ops_total as f64 / elapsed,
        100.0 * refused as f64 / mix_total.max(1) as f64,
        100.0 * failed as f64 / mix_total.max(1) as f64
    );
    println!(
        "  refused: an admission refusal (CapacityExceeded), counted by the limit that refused it;"
    );
    println!("  failed: any other error, e.g. a lookup or join that raced its session's churn (NotFound).");
    let mut by_limit: HashMap<&str, u64> = HashMap::new();
    for ((_, scope), n) in refusals {
        *by_limit.entry(scope.as_str()).or_default() += n;
    }
    let mut by_limit: Vec<_> = by_limit.into_iter().collect();
    by_limit.sort();
    for (scope, n) in by_limit {
        println!("  refused by the {scope}: {n}");
    }
    (mix_total, store_ops_total, rows)
}

/// The limits of the run: sized for `n` sessions, so nothing is refused
/// unless the mix itself overflows them.
fn limits(n: u64) -> StoreConfig {
    StoreConfig::default()
        .leases_max(n * 2)
        .listings_max(n * 2)
        .presence_max(n * (MEMBERS + 2) * 2)
        .attempts_max(n)
        // This run compresses a relay's join rate about a hundredfold, so it
        // remembers consumed tokens for 2 s instead of the default 60 s and
        // sizes the replay memory for that (see ADR 0008 for real sizing).
        .replay_max(n * 64)
        .replay_grace(Duration::from_secs(2))
        .tenants_max(TENANTS)
        .tenant(
            TenantQuota::unlimited()
                .leases_max(n)
                .listings_max(n)
                .presence_max(n * (MEMBERS + 2))
                .attempts_max(n)
                .replay_max(n * 64)
                .idempotency_max(1)
                .locks_max(1),
        )
        .subscriber_buffer_max(1 << 20)
}

/// One worker's results.
struct Tally {
    hist: HashMap<Op, Histogram>,
    counts: HashMap<Op, u64>,
    failures: HashMap<Op, u64>,
    refusals: HashMap<(Op, String), u64>,
    /// Open loop: how far behind its schedule the worker was at the end.
    behind: Duration,
}

impl Tally {
    fn new() -> Self {
        Tally {
            hist: MIX.iter().map(|m| (m.0, Histogram::new())).collect(),
            counts: HashMap::new(),
            failures: HashMap::new(),
            refusals: HashMap::new(),
            behind: Duration::ZERO,
        }
    }

    fn record(&mut self, op: Op, result: Result<(), relaystore::Error>, ns: Option<u64>) {
        if let Some(ns) = ns {
            self.hist.get_mut(&op).unwrap().record(ns);
        }
        match result {
            Ok(()) => {}
            // An admission refusal, by the limit that refused.
            Err(relaystore::Error::CapacityExceeded { scope, .. }) => {
                *self.refusals.entry((op, scope.to_string())).or_default() += 1;
            }
            // Anything else: e.g. a lookup that raced churn.
            Err(_) => *self.failures.entry(op).or_default() += 1,
        }
        *self.counts.entry(op).or_default() += 1;
    }

    fn merge(&mut self, other: Tally) {
        for (op, h) in &other.hist {
            self.hist.get_mut(op).unwrap().merge(h);
        }
        for (op, n) in other.counts {
            *self.counts.entry(op).or_default() += n;
        }
        for (op, n) in other.failures {
            *self.failures.entry(op).or_default() += n;
        }
        for (key, n) in other.refusals {
            *self.refusals.entry(key).or_default() += n;
        }
        self.behind = self.behind.max(other.behind);
    }
}

#[path = "capacity/redis.rs"]
mod on_redis;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = options(
        Options {
            sessions: 20000,
            seconds: 15,
            threads: 2,
            // Accepted, off unless given.
            json: Some(String::new()),
            open_loop: Some(0),
            engine: Some("memory".into()),
        },
        USAGE,
    );
    let n = o.sessions;
    let config = limits(n);
    match o.engine.as_deref() {
        Some("memory") => {}
        Some("redis" | "redis-cluster") => return on_redis::run(&o, config),
        Some(other) => {
            eprintln!("error: unknown engine {other:?}\n\n{USAGE}");
            std::process::exit(2);
        }
        None => unreachable!("the default is memory"),
    }
    let clock = Arc::new(SystemClock::new());
    let store = Arc::new(Store::new(config, clock.clone())?);
    // Only presence removals matter to the lag measurement: the other
    // collections' events are never buffered for this subscriber and never
    // wake its reader.
    let events = store.subscribe_to(&[Collection::Presence])?;

    let mode = match o.open_loop {
        Some(rate) => format!("open loop at {rate} mix ops/s"),
        None => "closed loop".to_string(),
    };
    println!(
        "relaystore capacity run: {n} sessions ({} tenants, {MEMBERS} members each), {} threads, {} s, {mode}",
        TENANTS, o.threads, o.seconds
    );
    let heap_before = heap_bytes();
    let setup = Instant::now();
    let sessions: Vec<Session> = (0..n)
        .map(|i| {
            host(&store, i).map(|lease| Session {
                tenant: TenantId(i % TENANTS),
                lease: Mutex::new(lease),
            })
        })
        .collect::<Result<_, _>>()?;
    let heap_per_session =
        (heap_bytes() - heap_before) as f64 / n as f64 - std::mem::size_of::<Session>() as f64;
    println!(
        "hosted {n} sessions in {:.2?}: {:.0} heap bytes per session (lease + listing + {MEMBERS} presence, all indexes and timers)",
        setup.elapsed(),
        heap_per_session
    );

    let driver = ExpiryDriver::spawn(store.clone(), Duration::from_millis(10))?;
    let sessions = Arc::new(sessions);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    // Deadlines of vanished members, to measure expiry lag from the events.
    let vanished: Arc<Mutex<HashMap<String, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    let total_rate: f64 = MIX.iter().map(|m| m.1).sum();
    // Open loop: each worker offers an equal share of the rate.
    let pace = o
        .open_loop
        .map(|rate| Duration::from_secs_f64(o.threads as f64 / rate as f64));
    let started = Instant::now();
    let cpu_started = cpu_time();
    let workers: Vec<_> = (0..o.threads)
        .map(|t| {
            let (store, sessions, stop, done, vanished) = (
                store.clone(),
                sessions.clone(),
                stop.clone(),
                done.clone(),
                vanished.clone(),
            );
            std::thread::spawn(move || {
                let mut tally = Tally::new();
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                let mut vanish_seq = 0u64;
                let mut perform = |op: Op, i: u64, x: u64| -> Result<(), relaystore::Error> {
                    let s = &sessions[i as usize];
                    match op {
                        Op::Heartbeat => store
                            .heartbeat(
                                s.tenant,
                                &format!("s{i}-m{}", x % MEMBERS),
                                PRESENCE_TTL,
                                None,
                                None,
                            )
                            .map(drop),
                        Op::Lookup => store.get_listing(s.tenant, &listing(i)).map(drop),
                        Op::Join => {
                            let addr = SocketAddr::from(([203, 0, 113, (x % 250) as u8], 40_000));
                            store
                                .begin_join(
                                    s.tenant,
                                    &listing(i),
                                    "client",
                                    Duration::from_secs(10),
                                    None,
                                )
                                .and_then(|ticket| {
                                    store.bind_endpoint(
                                        s.tenant,
                                        ticket.attempt,
                                        &ticket.token,
                                        addr,
                                    )?;
                                    store.consume(s.tenant, &ticket.token)
                                })
                                .map(drop)
                        }
                        Op::Refresh => {
                            let lease = *s.lease.lock().unwrap();
                            store.renew(s.tenant, lease, LEASE_TTL).map(drop)
                        }
                        Op::Churn => {
                            let mut lease = s.lease.lock().unwrap();
                            let _ = store.revoke(s.tenant, *lease);
                            let id = store.grant(s.tenant, "host", LEASE_TTL, None)?.id;
                            *lease = id;
                            store
                                .publish(s.tenant, id, &listing(i), b"mode=ffa", None)
                                .map(drop)
                        }
                        Op::Vanish => {
                            vanish_seq += 1;
                            let member = format!("gone-{t}-{vanish_seq}");
                            let deadline = Instant::now() + VANISH_TTL;
                            let result = store
                                .heartbeat(s.tenant, &member, VANISH_TTL, None, None)
                                .map(drop);
                            if result.is_ok() {
                                vanished.lock().unwrap().insert(member, deadline);
                            }
                            result
                        }
                    }
                };
                match pace {
                    // Closed loop: as fast as the store answers; one
                    // operation in SAMPLE_EVERY timed.
                    None => {
                        let mut k = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            for _ in 0..256 {
                                let (op, i) = pick(&mut x, n);
                                let t0 = k.is_multiple_of(SAMPLE_EVERY).then(Instant::now);
                                let result = perform(op, i, x);
                                let ns = t0.map(|t0| t0.elapsed().as_nanos() as u64);
                                tally.record(op, result, ns);
                                k += 1;
                            }
                            done.fetch_add(256, Ordering::Relaxed);
                        }
                    }
                    // Open loop: operation k of this thread is due at
                    // start + k * interval whether or not the store kept
                    // up, and its latency counts from then, so time spent
                    // queued behind slow operations shows.
                    Some(interval) => {
                        let start = Instant::now();
                        let mut k = 0u64;
                        // Scheduled from k itself, not by adding intervals:
                        // no drift, and no overflow however long the run.
                        let due_at = |k: u64| start + interval.mul_f64(k as f64);
                        while !stop.load(Ordering::Relaxed) {
                            let due = due_at(k);
                            wait_until(due);
                            let (op, i) = pick(&mut x, n);
                            let result = perform(op, i, x);
                            let ns = due.elapsed().as_nanos() as u64;
                            tally.record(op, result, Some(ns));
                            done.fetch_add(1, Ordering::Relaxed);
                            k += 1;
                        }
                        let next_due = due_at(k);
                        tally.behind = Instant::now().saturating_duration_since(next_due);
                    }
                }
                tally
            })
        })
        .collect();

    // Expiry lag from the removal events: a reader thread waits for each
    // one (no polling; the timeout only lets it notice the end of the run).
    let reading = Arc::new(AtomicBool::new(true));
    let seen = Arc::new(AtomicU64::new(0));
    let reader = {
        let (reading, seen, vanished) = (reading.clone(), seen.clone(), vanished.clone());
        std::thread::spawn(move || {
            let mut lag = Histogram::new();
            while reading.load(Ordering::Relaxed) {
                let event = match events.blocking_recv_timeout(Duration::from_millis(100)) {
                    Ok(Received::Event(event)) => event,
                    Ok(Received::Lagged { .. }) | Err(RecvError::Timeout) => continue,
                    Err(_) => break, // the store is gone
                };
                if let (Cause::Expired, RecordId::Member(m)) = (event.cause, &event.id) {
                    if let Some(deadline) = vanished.lock().unwrap().remove(&**m) {
                        lag.record(
                            Instant::now()
                                .saturating_duration_since(deadline)
                                .as_nanos() as u64,
                        );
                        seen.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            lag
        })
    };
    let mut last = 0;
    for second in 1..=o.seconds {
        std::thread::sleep(Duration::from_secs(1));
        let total = done.load(Ordering::Relaxed);
        let st = store.stats();
        println!(
            "  t={second:>3}s {:>10.0} mix ops/s  leases {:>7} listings {:>7} presence {:>8}  expired members seen {:>6}  sweep lag {:?}",
            (total - last) as f64,
            st.leases,
            st.listings,
            st.presence,
            seen.load(Ordering::Relaxed),
            store.sweep_lag()
        );
        last = total;
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    // The whole process: workers, the expiry driver and the event reader.
    let cpu_used = cpu_started
        .zip(cpu_time())
        .map(|(a, b)| (b - a).as_secs_f64());
    let mut tally = Tally::new();
    for w in workers {
        tally.merge(w.join().expect("worker panicked"));
    }
    let Tally {
        hist,
        counts,
        failures,
        refusals,
        behind,
    } = tally;
    // Members that vanished in the last second expire now: keep reading.
    std::thread::sleep(VANISH_TTL + Duration::from_millis(200));
    reading.store(false, Ordering::Relaxed);
    let lag = reader.join().expect("the event reader panicked");
    driver.stop();

    let (mix_total, store_ops_total, rows) =
        print_table(&hist, &counts, &failures, &refusals, elapsed);
    let refused: u64 = refusals.values().sum();
    let failed: u64 = failures.values().sum();
    if let Some(rate) = o.open_loop {
        let achieved = mix_total as f64 / elapsed;
        println!(
            "open loop: offered {rate} mix ops/s, completed {achieved:.0}/s; every operation timed from when it was due; {:.1} ms behind schedule at the end",
            behind.as_secs_f64() * 1e3
        );
        if achieved < 0.95 * rate as f64 {
            println!(
                "  the store did not keep up with the offered rate: the latencies above include the growing queue"
            );
        }
    }
    println!(
        "expiry lag over {} vanished members: p50 {} ms, p99 {} ms, max {} ms",
        lag.count(),
        micros(lag.quantile(0.5) / 1_000),
        micros(lag.quantile(0.99) / 1_000),
        micros(lag.quantile(1.0) / 1_000)
    );
    println!("  (from a member's deadline to its removal event reaching a reader blocked in recv; the driver ticks every 10 ms)");
    let gib = (1u64 << 30) as f64;
    // Read once: the text and the JSON report the same figure.
    let peak_rss = max_resident_bytes();
    match peak_rss {
        Some(rss) => println!(
            "memory: {heap_per_session:.0} heap bytes per session (the store's, at setup) = {:.0} sessions per GiB of heap; peak resident set {:.0} MiB",
            gib / heap_per_session,
            rss as f64 / (1u64 << 20) as f64
        ),
        None => println!(
            "memory: {heap_per_session:.0} heap bytes per session (the store's, at setup) = {:.0} sessions per GiB of heap",
            gib / heap_per_session
        ),
    }
    match cpu_used {
        Some(cpu) if o.open_loop.is_some() => println!(
            "cpu: {cpu:.1} s of CPU over {elapsed:.1} s, pacing included (the threads spin up to 200 µs before each due operation); sessions per core come from the closed-loop run"
        ),
        Some(cpu) if cpu > 0.0 => {
            let per_cpu_second = mix_total as f64 / cpu;
            println!(
                "cpu: {cpu:.1} s of CPU over {elapsed:.1} s ({:.2} cores busy); one core sustains ~{:.0} sessions at these rates",
                cpu / elapsed,
                per_cpu_second / total_rate
            );
            println!(
                "  ({total_rate:.3} mix operations per session per second; {per_cpu_second:.0} mix operations per CPU-second, the whole process counted)"
            );
            let sessions = per_cpu_second / total_rate;
            println!(
                "binds first: a core's ~{sessions:.0} sessions take {:.2} GiB of heap; with less memory than that per core, memory binds before CPU",
                sessions * heap_per_session / gib
            );
        }
        _ => {
            let per_core = mix_total as f64 / elapsed / o.threads as f64;
            println!(
                "one core sustains ~{:.0} sessions at these rates (from wall time x threads: this platform reports no CPU time)",
                per_core / total_rate
            );
        }
    }
    store
        .audit()
        .map_err(|e| format!("bookkeeping check failed: {e}"))?;
    println!("bookkeeping audit: ok");
    if let Some(path) = &o.json {
        let limits: Vec<String> = refusals
            .iter()
            .fold(HashMap::<&str, u64>::new(), |mut m, ((_, scope), n)| {
                *m.entry(scope.as_str()).or_default() += n;
                m
            })
            .into_iter()
            .map(|(scope, n)| format!("{scope:?}: {n}"))
            .collect();
        let cores = cpu_used.map_or("null".to_string(), |cpu| format!("{:.3}", cpu / elapsed));
        let offered = o.open_loop.map_or("null".to_string(), |r| r.to_string());
        let report = format!(
            "{{\n  \"sessions\": {n},\n  \"threads\": {},\n  \"seconds\": {elapsed:.3},\n  \"operations\": [\n    {}\n  ],\n  \"mix_ops_per_s\": {:.1},\n  \"store_ops_per_s\": {:.1},\n  \"refused\": {refused},\n  \"failed\": {failed},\n  \"refused_by_limit\": {{{}}},\n  \"expiry_lag_ms\": {{\"count\": {}, \"p50\": {:.3}, \"p99\": {:.3}, \"max\": {:.3}}},\n  \"heap_bytes_per_session\": {heap_per_session:.1},\n  \"peak_rss_bytes\": {},\n  \"cores_busy\": {cores},\n  \"open_loop_rate\": {offered},\n  \"behind_schedule_ms\": {:.3}\n}}\n",
            o.threads,
            rows.join(",\n    "),
            mix_total as f64 / elapsed,
            store_ops_total as f64 / elapsed,
            limits.join(", "),
            lag.count(),
            lag.quantile(0.5) as f64 / 1e6,
            lag.quantile(0.99) as f64 / 1e6,
            lag.quantile(1.0) as f64 / 1e6,
            peak_rss.map_or("null".to_string(), |b| b.to_string()),
            behind.as_secs_f64() * 1e3,
        );
        std::fs::write(path, report)?;
        println!("wrote {path}");
    }
    Ok(())
}
