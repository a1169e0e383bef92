//! An operator's view of a running store: a Prometheus recorder installed
//! as the `metrics` recorder, `/metrics` and the readiness probe `/ready`
//! served on loopback, and a relay workload (sessions granted, renewed,
//! revoked, and some refused at a tenant's quota) while it runs.
//!
//! ```text
//! cargo run --example metrics                  # prints a scrape, then exits
//! cargo run --example metrics -- --serve 9464  # keeps serving on 127.0.0.1:9464
//! ```

mod support;

use relaystore::{Store, StoreConfig, TenantId, TenantQuota};
use std::time::Duration;
use support::http;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let serve_port = match args.iter().position(|a| a == "--serve") {
        Some(i) => Some(
            args.get(i + 1)
                .ok_or("--serve needs a port")?
                .parse::<u16>()?,
        ),
        None => None,
    };
    let metrics = http::install_recorder();
    let config = StoreConfig::default().tenant(TenantQuota::default().leases_max(100));
    let store = Store::builder().config(config).build()?;
    let addr = http::serve(store.clone(), metrics, serve_port.unwrap_or(0))?;
    println!("serving http://{addr}/metrics and http://{addr}/ready");

    // A small relay workload: tenant 1 fills its quota of 100 leases and
    // is refused beyond it; tenant 2 churns sessions.
    let (busy, churn) = (TenantId(1), TenantId(2));
    let mut refused = 0;
    for i in 0..120 {
        match store.grant(busy, &format!("host-{i}"), Duration::from_secs(30), None) {
            Ok(_) => {}
            Err(relaystore::Error::CapacityExceeded { .. }) => refused += 1,
            Err(e) => return Err(e.into()),
        }
    }
    for i in 0..50 {
        let lease = store.grant(churn, &format!("peer-{i}"), Duration::from_secs(30), None)?;
        store.renew(churn, lease.id, Duration::from_secs(30))?;
        store.revoke(churn, lease.id)?;
    }
    println!("granted 150 leases, refused {refused}, revoked 50");
    // The sweeps set the gauges at most once a second: wait for the next.
    std::thread::sleep(Duration::from_millis(1_100));

    let (status, body) = http::get(addr, "/metrics")?;
    println!("GET /metrics: {status} (the counters that moved, and health; every series is there from the start)");
    for line in body.lines().filter(|l| {
        let moved = !l.ends_with(" 0");
        !l.starts_with('#')
            && ((moved
                && (l.starts_with("relaystore_admissions_total")
                    || l.starts_with("relaystore_refusals_total")
                    || l.starts_with("relaystore_removals_total")))
                || (l.starts_with("relaystore_records{") && l.contains("collection=\"leases\""))
                || l.starts_with("relaystore_health"))
    }) {
        println!("  {line}");
    }
    let (status, body) = http::get(addr, "/ready")?;
    println!("GET /ready: {status} {}", body.trim());
    if serve_port.is_some() {
        println!("serving until interrupted");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    Ok(())
}
