//! How long one timer cancel can take: the longest hold a cancel puts under
//! the caller's lock (in the store, a wheel shard's mutex), which is where
//! the wheel compacts its stale entries.
//!
//! ```text
//! cargo run --release --example wheel_holds -- [TIMERS]   # default 1000000
//! ```
//!
//! `TIMERS` timers with deadlines spread over an hour are cancelled in a
//! shuffled order, each cancel timed; printed: the cancels' p50, p99.9
//! and max, and the total.

#[path = "support/mod.rs"]
mod support;

use relaystore::wheel::Wheel;
use std::time::Instant;
use support::{micros, Histogram};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = match std::env::args().nth(1) {
        None => 1_000_000,
        Some(a) if a == "--help" || a == "-h" => {
            println!("usage: cargo run --release --example wheel_holds -- [TIMERS]");
            return Ok(());
        }
        Some(a) => a.parse().map_err(|e| format!("TIMERS: {e}"))?,
    };
    // xorshift: the same deadlines and order on every run.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut wheel = Wheel::new(0);
    let mut handles: Vec<_> = (0..n)
        .map(|i| wheel.insert(i, 1 + next() % 3_600_000))
        .collect();
    for i in (1..handles.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        handles.swap(i, j);
    }
    let mut hist = Histogram::new();
    let t0 = Instant::now();
    for h in handles {
        let t = Instant::now();
        assert!(wheel.cancel(h));
        hist.record(t.elapsed().as_nanos() as u64);
    }
    let total = t0.elapsed();
    assert!(wheel.is_empty());
    println!(
        "cancelled {n} timers in {:.1} ms: p50 {} µs, p99.9 {} µs, max {} µs; stale left {}",
        total.as_secs_f64() * 1e3,
        micros(hist.quantile(0.5)),
        micros(hist.quantile(0.999)),
        micros(hist.quantile(1.0)),
        wheel.stale(),
    );
    Ok(())
}
