//! Capacity run: a relay-like session workload on the embedded engine, with
//! the system clock and the real background expiry driver.
//!
//! ```text
//! cargo run --release --example capacity -- [--sessions N] [--seconds S] [--threads T]
//! ```
//!
//! `N` session slots are registered with a 30 s TTL. `T` worker threads then
//! run a mix for `S` seconds: heartbeats (renew, 70%), lookups (get, 20%), and
//! churn (a session leaves and a new one takes its slot, 10%). A session's
//! key is its slot and the slot's generation; each thread churns only its own
//! slots, so the population stays at `N`. A side population
//! of short-lived entries (2 s TTL, never renewed) measures expiry lag: the
//! time from a deadline to the record's physical removal by the driver.
//! One operation in 32 is timed, so the clock read does not dominate.

#[path = "support/mod.rs"]
mod support;

use relaystore::time::{Clock, SystemClock};
use relaystore::{ExpiryDriver, Sweep, TtlConfig, TtlMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{options, Histogram, Options};

const SESSION_TTL: Duration = Duration::from_secs(30);
const SHORT_TTL: Duration = Duration::from_secs(2);
const DRIVER_TICK: Duration = Duration::from_millis(10);
const SAMPLE_EVERY: u64 = 32;

/// A session record: what a relay keeps per hosted session.
#[derive(Clone)]
struct Session {
    _host: [u8; 16],
    _region: u16,
}

#[derive(Clone, Copy)]
enum Op {
    Heartbeat,
    Lookup,
    Churn,
}

const OPS: [(Op, &str); 3] = [
    (Op::Heartbeat, "heartbeat (renew)"),
    (Op::Lookup, "lookup (get)"),
    (Op::Churn, "churn (remove+insert)"),
];

/// The driver's target: sweeps the map and records each removal's lag.
struct MeasuredSweep {
    map: Arc<TtlMap<u64, Session>>,
    lag: Mutex<Histogram>,
    expired: AtomicU64,
}

impl Sweep for MeasuredSweep {
    fn sweep_expired(&self) -> usize {
        let removed = self.map.sweep();
        let now = self.map.clock().now();
        let mut lag = self.lag.lock().unwrap();
        for r in &removed {
            lag.record(now.saturating_since(r.stamp.deadline).as_nanos() as u64);
        }
        self.expired
            .fetch_add(removed.len() as u64, Ordering::Relaxed);
        removed.len()
    }
}

/// A session's key: its slot in the high bits, the slot's generation low.
fn key(slot: u64, generation: u64) -> u64 {
    (slot << 24) | (generation & 0xFF_FFFF)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = options(
        Options::plain(200000, 10, 2),
        "usage: ttl_capacity [--sessions N] [--seconds S] [--threads T]",
    );
    let short_lived = (o.sessions / 10).max(1);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let config = TtlConfig {
        name: "sessions",
        entries_max: o.sessions + short_lived,
        ttl_min: Duration::from_millis(100),
        ttl_max: Duration::from_secs(3600),
    };
    let map = Arc::new(TtlMap::new(config, clock)?);
    let session = Session {
        _host: [7; 16],
        _region: 3,
    };

    println!(
        "relaystore capacity run: {} sessions, {} short-lived, {} threads, {} s, driver tick {:?}",
        o.sessions, short_lived, o.threads, o.seconds, DRIVER_TICK
    );
    let setup = Instant::now();
    for slot in 0..o.sessions {
        map.insert(key(slot, 0), session.clone(), SESSION_TTL)?;
    }
    println!(
        "registered {} sessions in {:.2?} ({:.0} inserts/s)",
        o.sessions,
        setup.elapsed(),
        o.sessions as f64 / setup.elapsed().as_secs_f64()
    );

    let measured = Arc::new(MeasuredSweep {
        map: map.clone(),
        lag: Mutex::new(Histogram::new()),
        expired: AtomicU64::new(0),
    });
    let driver = ExpiryDriver::spawn(measured.clone(), DRIVER_TICK)?;

    // Short-lived entries, registered in a burst a little after start, so
    // their deadlines fall inside the run.
    let short_base = u64::MAX - short_lived;
    for i in 0..short_lived {
        map.insert(short_base + i, session.clone(), SHORT_TTL)?;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let done_ops = Arc::new(AtomicU64::new(0));
    let generations: Arc<Vec<AtomicU64>> =
        Arc::new((0..o.sessions).map(|_| AtomicU64::new(0)).collect());
    let started = Instant::now();
    let workers: Vec<_> = (0..o.threads)
        .map(|t| {
            let (map, stop, done_ops, generations) = (
                map.clone(),
                stop.clone(),
                done_ops.clone(),
                generations.clone(),
            );
            let threads = o.threads as u64;
            let session = session.clone();
            let sessions = o.sessions;
            std::thread::spawn(move || {
                let mut hist: Vec<Histogram> = OPS.iter().map(|_| Histogram::new()).collect();
                let mut counts = [0u64; 3];
                let mut refused = 0u64;
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..256 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let roll = x % 100;
                        let op = if roll < 70 {
                            Op::Heartbeat
                        } else if roll < 90 {
                            Op::Lookup
                        } else {
                            Op::Churn
                        };
                        let mut slot = (x >> 20) % sessions;
                        if matches!(op, Op::Churn) {
                            // Only this thread churns its own slots.
                            slot -= slot % threads;
                            slot = (slot + t as u64).min(sessions - 1);
                        }
                        let generation = generations[slot as usize].load(Ordering::Relaxed);
                        let id = key(slot, generation);
                        let timed = n.is_multiple_of(SAMPLE_EVERY);
                        let t0 = timed.then(Instant::now);
                        let ok = match op {
                            Op::Heartbeat => map.renew(&id, SESSION_TTL).is_ok(),
                            Op::Lookup => map.get(&id).is_ok(),
                            Op::Churn if slot % threads == t as u64 => {
                                let left = map.remove(&id).is_ok();
                                generations[slot as usize].store(generation + 1, Ordering::Relaxed);
                                let fresh = key(slot, generation + 1);
                                left && map.insert(fresh, session.clone(), SESSION_TTL).is_ok()
                            }
                            // The last slot may belong to another thread.
                            Op::Churn => map.get(&id).is_ok(),
                        };
                        if let Some(t0) = t0 {
                            hist[op as usize].record(t0.elapsed().as_nanos() as u64);
                        }
                        refused += u64::from(!ok);
                        counts[op as usize] += 1;
                        n += 1;
                    }
                    done_ops.fetch_add(256, Ordering::Relaxed);
                }
                (hist, counts, refused)
            })
        })
        .collect();

    let mut last = 0;
    for second in 1..=o.seconds {
        std::thread::sleep(Duration::from_secs(1));
        let total = done_ops.load(Ordering::Relaxed);
        println!(
            "  t={second:>3}s  {:>10.0} ops/s  held {:>8}  expired so far {:>7}  sweep lag {:?}",
            (total - last) as f64,
            map.len(),
            measured.expired.load(Ordering::Relaxed),
            map.sweep_lag()
        );
        last = total;
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    let mut hist: Vec<Histogram> = OPS.iter().map(|_| Histogram::new()).collect();
    let mut counts = [0u64; 3];
    let mut refused = 0;
    for w in workers {
        let (h, c, r) = w.join().expect("worker panicked");
        for (a, b) in hist.iter_mut().zip(&h) {
            a.merge(b);
        }
        for (a, b) in counts.iter_mut().zip(c) {
            *a += b;
        }
        refused += r;
    }
    driver.stop();

    let secs = elapsed.as_secs_f64();
    let total: u64 = counts.iter().sum();
    println!();
    println!(
        "{:<24}{:>14}{:>10}{:>10}{:>10}",
        "operation", "ops/s", "p50 ns", "p99 ns", "p99.9 ns"
    );
    for (i, (_, name)) in OPS.iter().enumerate() {
        println!(
            "{:<24}{:>14.0}{:>10}{:>10}{:>10}",
            name,
            counts[i] as f64 / secs,
            hist[i].quantile(0.50),
            hist[i].quantile(0.99),
            hist[i].quantile(0.999)
        );
    }
    println!("{:<24}{:>14.0}", "all", total as f64 / secs);
    println!(
        "per thread: {:.0} ops/s; refused or missing: {refused} ({:.3}%)",
        total as f64 / secs / o.threads as f64,
        100.0 * refused as f64 / total.max(1) as f64
    );
    let lag = measured.lag.lock().unwrap();
    println!(
        "expiry lag (deadline -> removal) over {} expirations: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        lag.count(),
        lag.quantile(0.5) as f64 / 1e6,
        lag.quantile(0.99) as f64 / 1e6,
        lag.quantile(1.0) as f64 / 1e6
    );
    // Sessions one core carries if each session costs this mix's average
    // operation at one heartbeat every 5 s (presence rate) plus a lease
    // refresh every 300 s (TURN permission lifetime).
    let ops_per_session_s = 1.0 / 5.0 + 1.0 / 300.0;
    let per_core = total as f64 / secs / o.threads as f64;
    println!(
        "one core at this cost per operation carries ~{:.0} sessions at relay rates",
        per_core / ops_per_session_s
    );
    // The run ends with the books balanced: every admitted record is held
    // and scheduled exactly once.
    let (held, admitted, scheduled) = (map.len() as u64, map.admitted(), map.scheduled() as u64);
    println!("held {held}, admitted {admitted}, scheduled {scheduled}");
    if held != admitted || held != scheduled {
        return Err("bookkeeping mismatch: held, admitted and scheduled differ".into());
    }
    if lag.count() < short_lived && o.seconds >= 3 {
        return Err(format!(
            "only {} of {short_lived} short-lived entries expired",
            lag.count()
        )
        .into());
    }
    Ok(())
}
