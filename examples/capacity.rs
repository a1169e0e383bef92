//! Capacity run: a relay workload on the embedded store, with the system
//! clock and the real background expiry driver.
//!
//! ```text
//! cargo run --release --example capacity -- [--sessions N] [--seconds S] [--threads T] [--baseline]
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
//! Hosted members' first heartbeats carry the lease's 600 s TTL
//! (`--host-ttl`), standing for the heartbeats a relay's members send
//! while it fills: hosting 10^7 sessions takes about a minute, and with
//! 15 s the mix would begin in a mass expiry of most members.
//!
//! `--mix heartbeat=R,lookup=R,join=R,refresh=R,churn=R,vanish=R` sets
//! these rates (any subset; the run prints the ones it uses).
//!
//! It reports throughput and latency per operation (one operation in 16 is
//! timed), heap bytes per session (a counting allocator) beside the
//! process's heap and resident set, expiry lag (deadline to the removal
//! event, from the vanished members), and how many sessions one core
//! carries at the rates above, measured at the size asked for (an
//! operation costs more in a larger store: `--sessions`).
//!
//! With `--baseline` the same sessions and the same mix then run, in the
//! same process, on the store a relay engineer writes first
//! (`capacity/baseline.rs`: one `Mutex<HashMap>` per collection, a
//! `BinaryHeap` of deadlines and a sweeper thread, with the same limits,
//! exactly-once consume, replay memory and cascade), and a last table puts
//! the two side by side with their ratios. With `--engine redis
//! --baseline` the mix first runs as plain Redis commands on the same
//! server (`capacity/redis.rs`), compared per Redis CPU-second.
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
/// The most sessions after which the run audits the store's bookkeeping
/// (`Store::audit`, whose side structures outgrow the store itself).
const AUDIT_SESSIONS_MAX: u64 = 2_000_000;
const MEMBERS: u64 = 4;
const LEASE_TTL: Duration = Duration::from_secs(600);
const PRESENCE_TTL: Duration = Duration::from_secs(15);
const VANISH_TTL: Duration = Duration::from_secs(1);
/// The TTL of a hosted member's first heartbeat (`--host-ttl`): the
/// lease's, so that a hosting phase longer than [`PRESENCE_TTL`] (a
/// minute at 10^7 sessions) does not end with most members expired at
/// once. The mix's heartbeats carry [`PRESENCE_TTL`].
const HOST_TTL: Duration = LEASE_TTL;
const SAMPLE_EVERY: u64 = 16;
/// The most replay records the run sizes its store for (see [`limits`]).
const REPLAY_MAX: u64 = 1 << 24;
/// The least room for vanished members still alive (see [`limits`]):
/// 1 s of them at 15 M mix operations a second.
const VANISHING_ROOM: u64 = 1 << 18;
/// The least replay room of a run (see [`limits`]).
const REPLAY_FLOOR: u64 = 1 << 22;

const USAGE: &str =
    "usage: cargo run --release --example capacity -- [--sessions N] [--seconds S] [--threads T] [--mix K=R,...] [--json PATH] [--open-loop R] [--baseline]

  --sessions N   hosted sessions (default 20000)
  --seconds S    how long the load runs (default 15)
  --threads T    worker threads running the operation mix (default 2)
  --host-ttl S   the TTL in seconds of a hosted member's first heartbeat (default 600, the
                 lease's; the mix's heartbeats carry 15 s). 15 makes a run whose hosting takes
                 longer than 15 s begin with a mass expiry (memory engine only)
  --mix K=R,...  the traffic each session offers, per second, by operation: heartbeat (default
                 0.8), lookup (0.2), join (1/30), refresh (1/300), churn (1/600), vanish (1/60);
                 the ones not named keep their defaults
  --json PATH    also write the results as JSON to PATH (for dashboards and comparisons)
  --baseline     then run the same sessions and mix on a plain baseline store (a Mutex<HashMap>
                 per collection, a BinaryHeap of deadlines, a sweeper thread) and print the two
                 side by side with their ratios; with --json, the file holds both runs. With
                 --engine redis: first run the mix as plain Redis commands (SET PX NX, PEXPIRE,
                 GET, GETDEL, DEL; no Lua) on the same server, then compare per Redis CPU-second
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

/// Per session per second, from the table in the module docs: the
/// defaults, which `--mix` overrides ([`mix`]).
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

/// The name `--mix` gives each operation, in [`MIX`]'s order.
const MIX_KEYS: [&str; 6] = ["heartbeat", "lookup", "join", "refresh", "churn", "vanish"];

/// The run's mix: [`MIX`] with the rates `--mix` set.
static RUN_MIX: std::sync::OnceLock<[(Op, f64, &str); 6]> = std::sync::OnceLock::new();

/// The mix this run offers, per session per second.
fn run_mix_rates() -> &'static [(Op, f64, &'static str); 6] {
    RUN_MIX.get_or_init(|| MIX)
}

/// Reads `--mix`: `key=rate` pairs, comma-separated, each rate per
/// session per second and non-negative; the operations it does not name
/// keep their defaults, and at least one rate must be positive.
fn parse_mix(text: &str) -> Result<[(Op, f64, &'static str); 6], String> {
    let mut mix = MIX;
    for pair in text.split(',').filter(|p| !p.is_empty()) {
        let (key, rate) = pair
            .split_once('=')
            .ok_or(format!("--mix: {pair:?} is not key=rate"))?;
        let at = MIX_KEYS.iter().position(|k| *k == key).ok_or(format!(
            "--mix: unknown operation {key:?} (one of {MIX_KEYS:?})"
        ))?;
        mix[at].1 = match rate.parse::<f64>() {
            Ok(r) if r.is_finite() && r >= 0.0 => r,
            _ => {
                return Err(format!(
                    "--mix: {key}={rate} is not a rate (per session per second, at least 0)"
                ))
            }
        };
    }
    if mix.iter().all(|m| m.1 == 0.0) {
        return Err("--mix: every rate is 0".into());
    }
    Ok(mix)
}

/// The traffic a session offers, as one line.
fn print_mix() {
    let rates: Vec<String> = MIX_KEYS
        .iter()
        .zip(run_mix_rates())
        .map(|(key, (_, rate, _))| format!("{key} {rate:.4}"))
        .collect();
    let total: f64 = run_mix_rates().iter().map(|m| m.1).sum();
    println!(
        "traffic per session per second: {} ({total:.3} in all; set with --mix key=rate,...)",
        rates.join(", ")
    );
}

/// Store operations one mix entry performs.
fn store_ops(op: Op) -> u64 {
    match op {
        Op::Join | Op::Churn => 3,
        _ => 1,
    }
}

/// Why a mix operation did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// An admission refusal, by the limit that refused it.
    Refused(String),
    /// Anything else: e.g. a lookup or join that raced its session's churn.
    Failed,
}

impl From<relaystore::Error> for Failure {
    fn from(e: relaystore::Error) -> Self {
        match e {
            relaystore::Error::CapacityExceeded { scope, .. } => {
                Failure::Refused(scope.to_string())
            }
            _ => Failure::Failed,
        }
    }
}

/// A store the mix runs on, in process: the embedded store or the
/// baseline.
trait Subject: Send + Sync + 'static {
    type Lease: Copy + Send + 'static;
    /// What the tables call it.
    const NAME: &'static str;
    /// Hosts session `i`: its lease, listing and members.
    /// Hosts session `i`; its members' first heartbeats carry `member_ttl`.
    fn host(&self, i: u64, member_ttl: Duration) -> Result<Self::Lease, Failure>;
    fn heartbeat(&self, tenant: u64, member: &str, ttl: Duration) -> Result<(), Failure>;
    fn lookup(&self, tenant: u64, listing: &str) -> Result<(), Failure>;
    /// begin_join, bind_endpoint, consume.
    fn join(&self, tenant: u64, listing: &str, addr: SocketAddr) -> Result<(), Failure>;
    fn refresh(&self, tenant: u64, lease: Self::Lease) -> Result<(), Failure>;
    /// Revokes the session's lease (cascading) and hosts it again under a
    /// new one, stored in `lease` once granted.
    fn churn(&self, tenant: u64, lease: &mut Self::Lease, listing: &str) -> Result<(), Failure>;
    /// Starts expiry in the background (after setup, as a relay would
    /// start it at boot) and returns the next expired member's name,
    /// waiting up to the given time for it.
    fn start_expiry(self: &Arc<Self>)
        -> Result<Box<dyn FnMut(Duration) -> Expiry + Send>, Failure>;
    fn stop_expiry(&self);
    /// A progress line's counts.
    fn counts(&self) -> String;
    /// The store's own check of its bookkeeping.
    fn audit(&self) -> Result<(), String>;
}

/// What an expiry reader saw.
enum Expiry {
    Member(String),
    Nothing,
    Closed,
}

/// The embedded store, with the system clock and its expiry driver.
struct Embedded {
    store: Arc<Store>,
    driver: Mutex<Option<ExpiryDriver>>,
    events: Mutex<Option<relaystore::events::Subscription>>,
}

impl Subject for Embedded {
    type Lease = LeaseId;
    const NAME: &'static str = "relaystore";

    fn host(&self, i: u64, member_ttl: Duration) -> Result<LeaseId, Failure> {
        let (s, tenant) = (&self.store, TenantId(i % TENANTS));
        let lease = s.grant(tenant, &format!("host-{i}"), LEASE_TTL, None)?;
        s.publish(tenant, lease.id, &listing(i), b"mode=ffa;slots=8", None)?;
        for m in 0..MEMBERS {
            s.heartbeat(tenant, &format!("s{i}-m{m}"), member_ttl, None, None)?;
        }
        Ok(lease.id)
    }

    fn heartbeat(&self, tenant: u64, member: &str, ttl: Duration) -> Result<(), Failure> {
        let tenant = TenantId(tenant);
        Ok(self
            .store
            .heartbeat(tenant, member, ttl, None, None)
            .map(drop)?)
    }

    fn lookup(&self, tenant: u64, listing: &str) -> Result<(), Failure> {
        Ok(self
            .store
            .get_listing(TenantId(tenant), listing)
            .map(drop)?)
    }

    fn join(&self, tenant: u64, listing: &str, addr: SocketAddr) -> Result<(), Failure> {
        let (s, tenant) = (&self.store, TenantId(tenant));
        let ticket = s.begin_join(tenant, listing, "client", Duration::from_secs(10), None)?;
        s.bind_endpoint(tenant, ticket.attempt, &ticket.token, addr)?;
        Ok(s.consume(tenant, &ticket.token, None).map(drop)?)
    }

    fn refresh(&self, tenant: u64, lease: LeaseId) -> Result<(), Failure> {
        Ok(self
            .store
            .renew(TenantId(tenant), lease, LEASE_TTL)
            .map(drop)?)
    }

    fn churn(&self, tenant: u64, lease: &mut LeaseId, listing: &str) -> Result<(), Failure> {
        let (s, tenant) = (&self.store, TenantId(tenant));
        let _ = s.revoke(tenant, *lease);
        *lease = s.grant(tenant, "host", LEASE_TTL, None)?.id;
        Ok(s.publish(tenant, *lease, listing, b"mode=ffa", None)
            .map(drop)?)
    }

    fn start_expiry(
        self: &Arc<Self>,
    ) -> Result<Box<dyn FnMut(Duration) -> Expiry + Send>, Failure> {
        let driver = ExpiryDriver::spawn(self.store.clone(), Duration::from_millis(10))
            .map_err(|_| Failure::Failed)?;
        *self.driver.lock().unwrap() = Some(driver);
        let events = self.events.lock().unwrap().take().ok_or(Failure::Failed)?;
        Ok(Box::new(move |wait| {
            match events.blocking_recv_timeout(wait) {
                Ok(Received::Event(event)) => match (event.cause, &event.id) {
                    (Cause::Expired, RecordId::Member(m)) => Expiry::Member(m.to_string()),
                    _ => Expiry::Nothing,
                },
                Ok(Received::Lagged { .. }) | Err(RecvError::Timeout) => Expiry::Nothing,
                Err(_) => Expiry::Closed, // the store is gone
            }
        }))
    }

    fn stop_expiry(&self) {
        if let Some(driver) = self.driver.lock().unwrap().take() {
            driver.stop();
        }
    }

    fn counts(&self) -> String {
        let st = self.store.stats();
        format!(
            "leases {:>7} listings {:>7} presence {:>8}  sweep lag {:?}",
            st.leases,
            st.listings,
            st.presence,
            self.store.sweep_lag()
        )
    }

    fn audit(&self) -> Result<(), String> {
        self.store.audit().map_err(|e| e.to_string())
    }
}

impl Subject for baseline::Baseline {
    type Lease = u64;
    const NAME: &'static str = "baseline";

    fn host(&self, i: u64, member_ttl: Duration) -> Result<u64, Failure> {
        let tenant = i % TENANTS;
        let lease = self.grant(tenant, &format!("host-{i}"), LEASE_TTL)?;
        self.publish(tenant, lease, &listing(i), b"mode=ffa;slots=8")?;
        for m in 0..MEMBERS {
            baseline::Baseline::heartbeat(self, tenant, &format!("s{i}-m{m}"), member_ttl)?;
        }
        Ok(lease)
    }

    fn heartbeat(&self, tenant: u64, member: &str, ttl: Duration) -> Result<(), Failure> {
        baseline::Baseline::heartbeat(self, tenant, member, ttl)
    }

    fn lookup(&self, tenant: u64, listing: &str) -> Result<(), Failure> {
        self.get_listing(tenant, listing).map(drop)
    }

    fn join(&self, tenant: u64, listing: &str, addr: SocketAddr) -> Result<(), Failure> {
        let (attempt, token) =
            self.begin_join(tenant, listing, "client", Duration::from_secs(10))?;
        self.bind_endpoint(tenant, attempt, &token, addr)?;
        self.consume(tenant, attempt, &token).map(drop)
    }

    fn refresh(&self, tenant: u64, lease: u64) -> Result<(), Failure> {
        self.renew(tenant, lease, LEASE_TTL)
    }

    fn churn(&self, tenant: u64, lease: &mut u64, listing: &str) -> Result<(), Failure> {
        let _ = self.revoke(tenant, *lease);
        *lease = self.grant(tenant, "host", LEASE_TTL)?;
        self.publish(tenant, *lease, listing, b"mode=ffa")
    }

    fn start_expiry(
        self: &Arc<Self>,
    ) -> Result<Box<dyn FnMut(Duration) -> Expiry + Send>, Failure> {
        let expired = self.run_sweeper().ok_or(Failure::Failed)?;
        Ok(Box::new(move |wait| match expired.recv_timeout(wait) {
            Ok(member) => Expiry::Member(member),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Expiry::Nothing,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Expiry::Closed,
        }))
    }

    fn stop_expiry(&self) {
        self.stop();
    }

    fn counts(&self) -> String {
        let (leases, listings, presence) = baseline::Baseline::counts(self);
        format!("leases {leases:>7} listings {listings:>7} presence {presence:>8}")
    }

    fn audit(&self) -> Result<(), String> {
        baseline::Baseline::audit(self)
    }
}

/// One hosted session's ids.
struct Session<L> {
    tenant: u64,
    lease: Mutex<L>,
}

fn listing(i: u64) -> String {
    format!("lobby-{i}")
}

/// Draws the next operation of the mix and its session.
fn pick(x: &mut u64, sessions: u64) -> (Op, u64) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    let mix = run_mix_rates();
    let total_rate: f64 = mix.iter().map(|m| m.1).sum();
    let mut roll = (*x >> 11) as f64 / (1u64 << 53) as f64 * total_rate;
    let op = mix.iter().find(|m| {
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
    // Consumed tokens are remembered for the join's 10 s plus the 2 s
    // grace: 12 s of the mix's joins, whatever the session count. This
    // machine's fastest runs pass 100,000 joins a second (1.2 M records),
    // so the room is at least 4 M records (about 330,000 a second), and
    // 64 per session past that.
    let replay = (n * 64).clamp(REPLAY_FLOOR, REPLAY_MAX);
    // Vanished members live their 1 s TTL (and the sweep's lag): one
    // mix operation in 60, whatever the session count, so a small run
    // on a fast machine holds more of them than its sessions' members.
    let presence = (n * (MEMBERS + 2) * 2).max(n * MEMBERS + VANISHING_ROOM);
    StoreConfig::default()
        .leases_max(n * 2)
        .listings_max(n * 2)
        .presence_max(presence)
        .attempts_max(n)
        // This run compresses a relay's join rate about a hundredfold, so it
        // remembers consumed tokens for 2 s instead of the default 60 s and
        // sizes the replay memory for that (see ADR 0008 for real sizing).
        .replay_max(replay)
        .replay_grace(Duration::from_secs(2))
        .tenants_max(TENANTS)
        .tenant(
            TenantQuota::unlimited()
                .leases_max(n)
                .listings_max(n)
                .presence_max(presence)
                .attempts_max(n)
                .replay_max(replay)
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

    fn record<E: Into<Failure>>(&mut self, op: Op, result: Result<(), E>, ns: Option<u64>) {
        if let Some(ns) = ns {
            self.hist.get_mut(&op).unwrap().record(ns);
        }
        match result.map_err(Into::into) {
            Ok(()) => {}
            Err(Failure::Refused(scope)) => {
                *self.refusals.entry((op, scope)).or_default() += 1;
            }
            Err(Failure::Failed) => *self.failures.entry(op).or_default() += 1,
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

#[path = "capacity/baseline.rs"]
mod baseline;

/// What one run of the mix measured.
struct Report {
    name: &'static str,
    tally: Tally,
    elapsed: f64,
    mix_total: u64,
    store_ops_total: u64,
    rows: Vec<String>,
    lag: Histogram,
    heap_per_session: f64,
    /// The process's heap when the hosting began: the subject's fixed
    /// tables (sized by its limits) and the harness's own.
    heap_at_start: i64,
    /// The process's heap at its highest so far.
    heap_peak: usize,
    /// CPU seconds of the whole process over the load.
    cpu_used: Option<f64>,
}

impl Report {
    fn mix_per_s(&self) -> f64 {
        self.mix_total as f64 / self.elapsed
    }
}

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
            baseline: Some(false),
            host_ttl: Some(0),
            mix: Some(String::new()),
        },
        USAGE,
    );
    if let Some(text) = &o.mix {
        let parsed = parse_mix(text).unwrap_or_else(|e| {
            eprintln!("error: {e}\n\n{USAGE}");
            std::process::exit(2);
        });
        RUN_MIX.set(parsed).expect("the mix is set once, first");
    }
    print_mix();
    let n = o.sessions;
    let config = limits(n);
    let baseline = o.baseline == Some(true);
    match o.engine.as_deref() {
        Some("memory") => {}
        Some("redis" | "redis-cluster") if o.host_ttl.is_some() => {
            eprintln!("error: --host-ttl applies to the memory engine only\n\n{USAGE}");
            std::process::exit(2);
        }
        Some("redis" | "redis-cluster") => return on_redis::run(&o, config),
        Some(other) => {
            eprintln!("error: unknown engine {other:?}\n\n{USAGE}");
            std::process::exit(2);
        }
        None => unreachable!("the default is memory"),
    }
    let mode = match o.open_loop {
        Some(rate) => format!("open loop at {rate} mix ops/s"),
        None => "closed loop".to_string(),
    };
    println!(
        "relaystore capacity run: {n} sessions ({} tenants, {MEMBERS} members each), {} threads, {} s, {mode}",
        TENANTS, o.threads, o.seconds
    );
    let store = Arc::new(Store::new(config.clone(), Arc::new(SystemClock::new()))?);
    // Only presence removals matter to the lag measurement: the other
    // collections' events are never buffered for this subscriber and never
    // wake its reader.
    let events = store.subscribe_to(&[Collection::Presence])?;
    let embedded = Arc::new(Embedded {
        store,
        driver: Mutex::new(None),
        events: Mutex::new(Some(events)),
    });
    let ours = run_mix(&o, &embedded)?;
    drop(embedded);
    let theirs = if baseline {
        println!();
        println!(
            "the same run on the baseline (one Mutex<HashMap> per collection, a BinaryHeap of deadlines, a sweeper thread every 10 ms; same limits and rules):"
        );
        Some(run_mix(&o, &baseline::Baseline::new(&config))?)
    } else {
        None
    };
    if let Some(theirs) = &theirs {
        compare(&o, &ours, theirs);
    }
    if let Some(path) = &o.json {
        let mut report = json(&o, &ours);
        if let Some(theirs) = &theirs {
            report = format!(
                "{{\n  \"relaystore\": {},\n  \"baseline\": {}\n}}\n",
                report.trim_end(),
                json(&o, theirs).trim_end()
            );
        }
        std::fs::write(path, report)?;
        println!("wrote {path}");
    }
    Ok(())
}

/// Hosts the sessions on `subject`, runs the mix on it, prints what it
/// measured and checks its bookkeeping.
fn run_mix<S: Subject>(
    o: &Options,
    subject: &Arc<S>,
) -> Result<Report, Box<dyn std::error::Error>> {
    let n = o.sessions;
    let member_ttl = Duration::from_secs(o.host_ttl.unwrap_or(HOST_TTL.as_secs()));
    let heap_before = heap_bytes();
    let setup = Instant::now();
    let sessions: Vec<Session<S::Lease>> = (0..n)
        .map(|i| {
            subject.host(i, member_ttl).map(|lease| Session {
                tenant: i % TENANTS,
                lease: Mutex::new(lease),
            })
        })
        .collect::<Result<_, _>>()
        .map_err(|_| "hosting the sessions failed: the run's limits are too small")?;
    let heap_per_session = (heap_bytes() - heap_before) as f64 / n as f64
        - std::mem::size_of::<Session<S::Lease>>() as f64;
    println!(
        "{}: hosted {n} sessions in {:.2?}: {:.0} heap bytes per session (lease + listing + {MEMBERS} presence, all indexes and timers)",
        S::NAME,
        setup.elapsed(),
        heap_per_session
    );

    let mut next_expired = subject
        .start_expiry()
        .map_err(|_| "starting expiry failed")?;
    let sessions = Arc::new(sessions);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    // Deadlines of vanished members, to measure expiry lag from the events.
    let vanished: Arc<Mutex<HashMap<String, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    // Open loop: each worker offers an equal share of the rate.
    let pace = o
        .open_loop
        .map(|rate| Duration::from_secs_f64(o.threads as f64 / rate as f64));
    let started = Instant::now();
    let cpu_started = cpu_time();
    let workers: Vec<_> = (0..o.threads)
        .map(|t| {
            let (subject, sessions, stop, done, vanished) = (
                subject.clone(),
                sessions.clone(),
                stop.clone(),
                done.clone(),
                vanished.clone(),
            );
            std::thread::spawn(move || {
                let mut tally = Tally::new();
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                let mut vanish_seq = 0u64;
                let mut perform = |op: Op, i: u64, x: u64| -> Result<(), Failure> {
                    let s = &sessions[i as usize];
                    match op {
                        Op::Heartbeat => subject.heartbeat(
                            s.tenant,
                            &format!("s{i}-m{}", x % MEMBERS),
                            PRESENCE_TTL,
                        ),
                        Op::Lookup => subject.lookup(s.tenant, &listing(i)),
                        Op::Join => {
                            let addr = SocketAddr::from(([203, 0, 113, (x % 250) as u8], 40_000));
                            subject.join(s.tenant, &listing(i), addr)
                        }
                        Op::Refresh => {
                            let lease = *s.lease.lock().unwrap();
                            subject.refresh(s.tenant, lease)
                        }
                        Op::Churn => {
                            let mut lease = s.lease.lock().unwrap();
                            subject.churn(s.tenant, &mut lease, &listing(i))
                        }
                        Op::Vanish => {
                            vanish_seq += 1;
                            let member = format!("gone-{t}-{vanish_seq}");
                            let deadline = Instant::now() + VANISH_TTL;
                            let result = subject.heartbeat(s.tenant, &member, VANISH_TTL);
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
                let member = match next_expired(Duration::from_millis(100)) {
                    Expiry::Member(member) => member,
                    Expiry::Nothing => continue,
                    Expiry::Closed => break,
                };
                if let Some(deadline) = vanished.lock().unwrap().remove(&member) {
                    lag.record(
                        Instant::now()
                            .saturating_duration_since(deadline)
                            .as_nanos() as u64,
                    );
                    seen.fetch_add(1, Ordering::Relaxed);
                }
            }
            lag
        })
    };
    let mut last = 0;
    for second in 1..=o.seconds {
        std::thread::sleep(Duration::from_secs(1));
        let total = done.load(Ordering::Relaxed);
        println!(
            "  t={second:>3}s {:>10.0} mix ops/s  {}  expired members seen {:>6}",
            (total - last) as f64,
            subject.counts(),
            seen.load(Ordering::Relaxed),
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
    // Members that vanished in the last second expire now: keep reading.
    std::thread::sleep(VANISH_TTL + Duration::from_millis(200));
    reading.store(false, Ordering::Relaxed);
    let lag = reader.join().expect("the event reader panicked");
    subject.stop_expiry();

    let (mix_total, store_ops_total, rows) = print_table(
        &tally.hist,
        &tally.counts,
        &tally.failures,
        &tally.refusals,
        elapsed,
    );
    let report = Report {
        name: S::NAME,
        tally,
        elapsed,
        mix_total,
        store_ops_total,
        rows,
        lag,
        heap_per_session,
        heap_at_start: heap_before,
        heap_peak: HEAP.max_allocated(),
        cpu_used,
    };
    print_details(o, &report);
    if n > AUDIT_SESSIONS_MAX {
        // The audit rebuilds every index on the side (ordered sets of every
        // name and place): past this size it needs more memory than the
        // store, which a run this large does not have to spare.
        println!(
            "bookkeeping audit: not run above {AUDIT_SESSIONS_MAX} sessions (it rebuilds every index beside the store)"
        );
        return Ok(report);
    }
    subject
        .audit()
        .map_err(|e| format!("{}: bookkeeping check failed: {e}", S::NAME))?;
    println!("bookkeeping audit: ok");
    Ok(report)
}

/// The lines under a run's table: open-loop pacing, expiry lag, memory
/// and CPU.
fn print_details(o: &Options, r: &Report) {
    let (elapsed, lag, heap_per_session) = (r.elapsed, &r.lag, r.heap_per_session);
    let total_rate: f64 = run_mix_rates().iter().map(|m| m.1).sum();
    if let Some(rate) = o.open_loop {
        let achieved = r.mix_per_s();
        println!(
            "open loop: offered {rate} mix ops/s, completed {achieved:.0}/s; every operation timed from when it was due; {:.1} ms behind schedule at the end",
            r.tally.behind.as_secs_f64() * 1e3
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
    println!("  (from a member's deadline to its removal event reaching a reader blocked in recv; expiry runs every 10 ms)");
    let gib = (1u64 << 30) as f64;
    let mib = |bytes: f64| bytes / (1u64 << 20) as f64;
    println!(
        "memory: {heap_per_session:.0} heap bytes per session (the store's, at setup) = {:.0} sessions per GiB of heap",
        gib / heap_per_session
    );
    println!(
        "  the process's heap: {:.0} MiB before hosting (tables sized by the limits, and the harness), {:.0} MiB for the {} sessions, {:.0} MiB at its peak so far (the mix adds replay memory and vanishing members)",
        mib(r.heap_at_start as f64),
        mib(heap_per_session * o.sessions as f64),
        o.sessions,
        mib(r.heap_peak as f64),
    );
    if let Some(rss) = max_resident_bytes() {
        println!(
            "  peak resident set so far {:.0} MiB: the peak heap, plus what the allocator keeps of freed memory, the threads' stacks and the program",
            mib(rss as f64)
        );
    }
    match r.cpu_used {
        Some(cpu) if o.open_loop.is_some() => println!(
            "cpu: {cpu:.1} s of CPU over {elapsed:.1} s, pacing included (the threads spin up to 200 µs before each due operation); sessions per core come from the closed-loop run"
        ),
        Some(cpu) if cpu > 0.0 => {
            let per_cpu_second = r.mix_total as f64 / cpu;
            println!(
                "cpu: {cpu:.1} s of CPU over {elapsed:.1} s ({:.2} cores busy); one core sustains ~{:.0} sessions at these rates, measured with {} sessions",
                cpu / elapsed,
                per_cpu_second / total_rate,
                o.sessions
            );
            println!(
                "  ({total_rate:.3} mix operations per session per second; {per_cpu_second:.0} mix operations per CPU-second, the whole process counted;"
            );
            println!(
                "  an operation costs more in a larger store: plan with --sessions at your size; docs/PERFORMANCE.md draws the curve from 10^4 to 10^7)"
            );
            let sessions = per_cpu_second / total_rate;
            println!(
                "binds first: a core's ~{sessions:.0} sessions take {:.2} GiB of heap; with less memory than that per core, memory binds before CPU",
                sessions * heap_per_session / gib
            );
        }
        _ => {
            let per_core = r.mix_per_s() / o.threads as f64;
            println!(
                "one core sustains ~{:.0} sessions at these rates (from wall time x threads: this platform reports no CPU time)",
                per_core / total_rate
            );
        }
    }
}

/// relaystore beside the baseline, with the ratios (relaystore over the
/// baseline: above 1 is better for throughput, below 1 for latency and
/// memory).
fn compare(o: &Options, ours: &Report, theirs: &Report) {
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}x", a / b)
        } else {
            "-".to_string()
        }
    };
    println!();
    println!(
        "relaystore beside the baseline ({} sessions, {} thread{}; ratio = relaystore / baseline)",
        o.sessions,
        o.threads,
        if o.threads == 1 { "" } else { "s" }
    );
    println!(
        "{:<38}{:>12}{:>12}{:>8}{:>11}{:>11}{:>8}",
        "operation", "ops/s", "baseline", "ratio", "p99 µs", "baseline", "ratio"
    );
    for (op, _, name) in MIX {
        let ops = |r: &Report| r.tally.counts.get(&op).copied().unwrap_or(0) as f64 / r.elapsed;
        let p99 = |r: &Report| r.tally.hist[&op].quantile(0.99);
        println!(
            "{:<38}{:>12.0}{:>12.0}{:>8}{:>11}{:>11}{:>8}",
            name,
            ops(ours),
            ops(theirs),
            ratio(ops(ours), ops(theirs)),
            micros(p99(ours)),
            micros(p99(theirs)),
            ratio(p99(ours) as f64, p99(theirs) as f64)
        );
    }
    println!(
        "{:<38}{:>12.0}{:>12.0}{:>8}",
        "all (mix ops/s)",
        ours.mix_per_s(),
        theirs.mix_per_s(),
        ratio(ours.mix_per_s(), theirs.mix_per_s())
    );
    println!(
        "{:<38}{:>12.0}{:>12.0}{:>8}",
        "heap bytes per session",
        ours.heap_per_session,
        theirs.heap_per_session,
        ratio(ours.heap_per_session, theirs.heap_per_session)
    );
    if let (Some(a), Some(b)) = (ours.cpu_used, theirs.cpu_used) {
        let per_cpu = |r: &Report, cpu: f64| r.mix_total as f64 / cpu;
        println!(
            "{:<38}{:>12.0}{:>12.0}{:>8}",
            "mix ops per CPU-second",
            per_cpu(ours, a),
            per_cpu(theirs, b),
            ratio(per_cpu(ours, a), per_cpu(theirs, b))
        );
    }
    let lag = |r: &Report| r.lag.quantile(0.99) as f64 / 1e6;
    println!(
        "{:<38}{:>12.1}{:>12.1}{:>8}",
        "expiry lag p99 (ms)",
        lag(ours),
        lag(theirs),
        ratio(lag(ours), lag(theirs))
    );
}

/// One run's results as JSON.
fn json(o: &Options, r: &Report) -> String {
    let refused: u64 = r.tally.refusals.values().sum();
    let failed: u64 = r.tally.failures.values().sum();
    let limits: Vec<String> = r
        .tally
        .refusals
        .iter()
        .fold(HashMap::<&str, u64>::new(), |mut m, ((_, scope), n)| {
            *m.entry(scope.as_str()).or_default() += n;
            m
        })
        .into_iter()
        .map(|(scope, n)| format!("{scope:?}: {n}"))
        .collect();
    let cores = r
        .cpu_used
        .map_or("null".to_string(), |cpu| format!("{:.3}", cpu / r.elapsed));
    let offered = o.open_loop.map_or("null".to_string(), |r| r.to_string());
    format!(
        "{{\n  \"store\": {:?},\n  \"sessions\": {},\n  \"threads\": {},\n  \"seconds\": {:.3},\n  \"operations\": [\n    {}\n  ],\n  \"mix_ops_per_s\": {:.1},\n  \"store_ops_per_s\": {:.1},\n  \"refused\": {refused},\n  \"failed\": {failed},\n  \"refused_by_limit\": {{{}}},\n  \"expiry_lag_ms\": {{\"count\": {}, \"p50\": {:.3}, \"p99\": {:.3}, \"max\": {:.3}}},\n  \"heap_bytes_per_session\": {:.1},\n  \"peak_rss_bytes\": {},\n  \"cores_busy\": {cores},\n  \"open_loop_rate\": {offered},\n  \"behind_schedule_ms\": {:.3}\n}}\n",
        r.name,
        o.sessions,
        o.threads,
        r.elapsed,
        r.rows.join(",\n    "),
        r.mix_per_s(),
        r.store_ops_total as f64 / r.elapsed,
        limits.join(", "),
        r.lag.count(),
        r.lag.quantile(0.5) as f64 / 1e6,
        r.lag.quantile(0.99) as f64 / 1e6,
        r.lag.quantile(1.0) as f64 / 1e6,
        r.heap_per_session,
        max_resident_bytes().map_or("null".to_string(), |b| b.to_string()),
        r.tally.behind.as_secs_f64() * 1e3,
    )
}
