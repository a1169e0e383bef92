//! Creation latency while the store removes records in bulk: how long a
//! grant on another tenant can be held up by a mass expiry, by revoking
//! many leases one by one (timer cancels, and the wheel's compaction), by
//! a cascade of one lease's children, or by a tenant's revocation.
//!
//! ```text
//! cargo run --release --example expiry_stall -- [--during WHAT] [--records N]
//! ```
//!
//! `WHAT` is one of:
//!
//! - `expiry` (default): `N` leases (default 100,000) all due in the same
//!   millisecond, swept by one `Store::sweep`;
//! - `revokes`: `N` leases revoked one by one by one thread;
//! - `cascade`: one lease with `N` presence records attached (default
//!   10,000), revoked;
//! - `tenant`: a tenant holding `N` leases, revoked with `revoke_tenant`.
//!
//! Meanwhile another thread grants and revokes leases of another tenant,
//! timing each grant. Printed: the grants' p50, p99, p99.9 and max while
//! the removal ran, and how long it took.

#[path = "support/mod.rs"]
mod support;

use relaystore::time::{ManualClock, MonoTime};
use relaystore::{LeaseId, Store, TenantId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use support::{micros, Histogram};

const USAGE: &str = "usage: cargo run --release --example expiry_stall -- \
[--during expiry|revokes|cascade|tenant] [--records N]";

#[derive(Clone, Copy, PartialEq)]
enum During {
    Expiry,
    Revokes,
    Cascade,
    Tenant,
}

fn parse() -> Result<(During, Option<u64>), String> {
    let (mut during, mut records) = (During::Expiry, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--during" => {
                during = match value.as_str() {
                    "expiry" => During::Expiry,
                    "revokes" => During::Revokes,
                    "cascade" => During::Cascade,
                    "tenant" => During::Tenant,
                    other => return Err(format!("--during: unknown removal {other:?}")),
                }
            }
            "--records" => {
                let n: u64 = value.parse().map_err(|e| format!("--records: {e}"))?;
                if n == 0 {
                    return Err("--records must be positive".into());
                }
                records = Some(n);
            }
            _ => return Err(format!("unknown option {flag:?}")),
        }
    }
    Ok((during, records))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (during, records) = parse().unwrap_or_else(|e| {
        eprintln!("error: {e}\n\n{USAGE}");
        std::process::exit(2);
    });
    let n = records.unwrap_or(if during == During::Cascade {
        10_000
    } else {
        100_000
    });
    let config = support::room_for_leases(n).presence_per_lease_max(n as usize);
    let clock = Arc::new(ManualClock::new());
    let store = Store::new(config, clock.clone())?;
    let doomed = TenantId(1);
    let ttl = Duration::from_secs(10);
    let mut leases: Vec<LeaseId> = Vec::new();
    match during {
        During::Cascade => {
            let parent = store.grant(doomed, "parent", ttl, None)?.id;
            for i in 0..n {
                store.heartbeat(doomed, &format!("m{i}"), ttl, None, Some(parent))?;
            }
            leases.push(parent);
        }
        _ => {
            for i in 0..n {
                leases.push(store.grant(doomed, &format!("h{i}"), ttl, None)?.id);
            }
        }
    }
    if during == During::Expiry {
        // Every lease is now due in the same millisecond.
        clock.set(MonoTime::from_millis(ttl.as_millis() as u64 + 1));
    }

    let start = Arc::new(Barrier::new(2));
    let removing = Arc::new(AtomicBool::new(true));
    let granter = {
        let (store, start, removing) = (store.clone(), start.clone(), removing.clone());
        std::thread::spawn(move || {
            let mut hist = Histogram::new();
            let other = TenantId(2);
            start.wait();
            while removing.load(Ordering::Acquire) {
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
    let what = match during {
        During::Expiry => {
            let removed = store.sweep();
            assert!(removed as u64 >= n, "swept {removed} of {n}");
            format!("swept {n} leases due in one millisecond")
        }
        During::Revokes => {
            for &id in &leases {
                store.revoke(doomed, id)?;
            }
            format!("revoked {n} leases one by one")
        }
        During::Cascade => {
            store.revoke(doomed, leases[0])?;
            format!("revoked a lease with {n} presence records attached")
        }
        During::Tenant => {
            store.revoke_tenant(doomed)?;
            format!("revoked a tenant holding {n} leases")
        }
    };
    let took = t0.elapsed();
    removing.store(false, Ordering::Release);
    let hist = granter.join().expect("the granting thread panicked");
    assert_eq!(store.stats().leases, 0, "every doomed lease is gone");
    println!(
        "{what} in {:.1} ms; {} grants meanwhile: p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs",
        took.as_secs_f64() * 1e3,
        hist.count(),
        micros(hist.quantile(0.5)),
        micros(hist.quantile(0.99)),
        micros(hist.quantile(0.999)),
        micros(hist.quantile(1.0)),
    );
    store.audit().map_err(|e| format!("audit: {e}"))?;
    Ok(())
}
