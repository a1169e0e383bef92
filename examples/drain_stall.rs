//! The longest single call while a drain ends: a store holding `N` leases
//! (default 200,000), each with a listing, reaches the end of its drain
//! window while another thread keeps calling it — `health`, `get_lease`,
//! `get_listing` and `renew`, each timed. The store is the builder's
//! (system clock, the expiry driver on its own thread), as in production.
//!
//! ```text
//! cargo run --release --example drain_stall -- [--records N]
//! ```
//!
//! Printed: how long after the window the store had drained (every lease
//! and listing revoked, `drained` resolved), and the calls' p50, p99,
//! p99.9 and max from the end of the window until then, next to the same
//! calls during the window (nothing being revoked: this run's baseline,
//! which shows the machine's own hiccups).

#[path = "support/mod.rs"]
mod support;

use relaystore::{Health, LeaseId, Store, StoreConfig, TenantId, TenantQuota};
use std::time::{Duration, Instant};
use support::{micros, Histogram};

const USAGE: &str = "usage: cargo run --release --example drain_stall -- [--records N]";

/// Tenants the records are spread over.
const TENANTS: u64 = 100;

fn records() -> Result<u64, String> {
    let mut args = std::env::args().skip(1);
    let mut n = 200_000;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--records" => {
                let value = args.next().ok_or("--records needs a value")?;
                n = value.parse().map_err(|e| format!("--records: {e}"))?;
                if n < TENANTS {
                    return Err(format!("--records must be at least {TENANTS}"));
                }
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(n)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = records().unwrap_or_else(|e| {
        eprintln!("error: {e}\n\n{USAGE}");
        std::process::exit(2);
    });
    let per_tenant = n / TENANTS;
    let config = StoreConfig::default()
        .leases_max(n)
        .listings_max(n)
        .tenant(
            TenantQuota::default()
                .leases_max(per_tenant)
                .listings_max(per_tenant),
        )
        .drain_window_max(Duration::from_secs(60));
    let store = Store::builder().config(config).build()?;
    let ttl = Duration::from_secs(600);
    let mut held: Vec<(TenantId, LeaseId, String)> = Vec::new();
    for t in 0..TENANTS {
        let tenant = TenantId(t + 1);
        for i in 0..per_tenant {
            let lease = store.grant(tenant, &format!("host-{i}"), ttl, None)?.id;
            let key = format!("lobby-{i}");
            store.publish(tenant, lease, &key, b"", None)?;
            held.push((tenant, lease, key));
        }
    }
    let total = held.len();
    let window = Duration::from_millis(300);
    store.begin_drain(window)?;
    let window_ends = Instant::now() + window;

    // The calling thread also watches for the end (no third thread wakes
    // up meanwhile to take a core from it).
    let caller = {
        let store = store.clone();
        std::thread::spawn(move || {
            let (mut during, mut after) = (Histogram::new(), Histogram::new());
            let mut i = 0usize;
            let mut time = |call: &mut dyn FnMut()| {
                let t0 = Instant::now();
                call();
                let t1 = Instant::now();
                let took = (t1 - t0).as_nanos() as u64;
                // A call that straddles the window's end counts as after.
                if t1 >= window_ends {
                    after.record(took);
                } else {
                    during.record(took);
                }
            };
            let give_up = window_ends + Duration::from_secs(60);
            let drained = loop {
                for _ in 0..256 {
                    let (tenant, lease, key) = &held[i % held.len()];
                    i = i.wrapping_add(7919);
                    time(&mut || {
                        let _ = store.health();
                    });
                    time(&mut || {
                        let _ = store.get_lease(*tenant, *lease);
                    });
                    time(&mut || {
                        let _ = store.get_listing(*tenant, key);
                    });
                    time(&mut || {
                        let _ = store.renew(*tenant, *lease, ttl);
                    });
                }
                if store.blocking_drained(Duration::ZERO) {
                    break true;
                }
                if Instant::now() > give_up {
                    break false;
                }
            };
            (drained, window_ends.elapsed(), during, after)
        })
    };
    let (drained, ended, during, after) = caller.join().expect("the calling thread panicked");
    assert!(
        drained,
        "the drain did not end within a minute of its window"
    );
    assert_eq!(store.health(), Health::Stopped);
    let stats = store.stats();
    assert_eq!((stats.leases, stats.listings), (0, 0), "{stats:?}");
    assert!(after.count() > 0, "no call was timed after the window");
    println!(
        "{total} leases and {total} listings drained {:.1} ms after the window",
        ended.as_secs_f64() * 1e3
    );
    for (when, hist) in [("while draining", &after), ("during the window", &during)] {
        println!(
            "  {when:<18} {:>8} calls (health, get_lease, get_listing, renew): \
             p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs",
            hist.count(),
            micros(hist.quantile(0.5)),
            micros(hist.quantile(0.99)),
            micros(hist.quantile(0.999)),
            micros(hist.quantile(1.0)),
        );
    }
    Ok(())
}
