//! Creation latency while a mass expiry is swept: how long a grant can be
//! held up by the sweep of the same table.
//!
//! ```text
//! cargo run --release --example expiry_stall -- [RECORDS]   # default 100000
//! ```
//!
//! `RECORDS` leases all expire in the same millisecond. One thread sweeps
//! them (one `Store::sweep`); another grants and revokes leases in a loop
//! the whole time, timing each grant. Printed: the grants' p50, p99,
//! p99.9 and max while the sweep ran, and how long the sweep took. A sweep
//! that holds the leases' wheel lock for its whole batch shows up as a
//! max close to the sweep's duration.

#[path = "support/mod.rs"]
mod support;

use relaystore::time::{ManualClock, MonoTime};
use relaystore::{Store, TenantId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use support::{micros, Histogram};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = match std::env::args().nth(1) {
        None => 100_000,
        Some(a) if a == "--help" || a == "-h" => {
            println!("usage: cargo run --release --example expiry_stall -- [RECORDS]");
            return Ok(());
        }
        Some(a) => a.parse().map_err(|e| format!("RECORDS: {e}"))?,
    };
    let config = support::room_for_leases(n);
    let clock = Arc::new(ManualClock::new());
    let store = Store::new(config, clock.clone())?;
    let doomed = TenantId(1);
    let ttl = Duration::from_secs(10);
    for i in 0..n {
        store.grant(doomed, &format!("h{i}"), ttl, None)?;
    }
    // Every lease is now due in the same millisecond.
    clock.set(MonoTime::from_millis(ttl.as_millis() as u64 + 1));

    let start = Arc::new(Barrier::new(2));
    let sweeping = Arc::new(AtomicBool::new(true));
    let granter = {
        let (store, start, sweeping) = (store.clone(), start.clone(), sweeping.clone());
        std::thread::spawn(move || {
            let mut hist = Histogram::new();
            let other = TenantId(2);
            start.wait();
            while sweeping.load(Ordering::Acquire) {
                let t0 = Instant::now();
                let g = store.grant(other, "fresh", Duration::from_secs(600), None);
                hist.record(t0.elapsed().as_nanos() as u64);
                if let Ok(g) = g {
                    store.revoke(other, g.id).expect("revoke a fresh lease");
                }
            }
            hist
        })
    };
    start.wait();
    let t0 = Instant::now();
    let removed = store.sweep();
    let swept_in = t0.elapsed();
    sweeping.store(false, Ordering::Release);
    let hist = granter.join().expect("the granting thread panicked");
    assert!(removed as u64 >= n, "swept {removed} of {n}");
    println!(
        "swept {n} leases due in one millisecond in {:.1} ms; {} grants meanwhile: p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs",
        swept_in.as_secs_f64() * 1e3,
        hist.count(),
        micros(hist.quantile(0.5)),
        micros(hist.quantile(0.99)),
        micros(hist.quantile(0.999)),
        micros(hist.quantile(1.0)),
    );
    store.audit().map_err(|e| format!("audit: {e}"))?;
    Ok(())
}
