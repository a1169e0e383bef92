//! Wiring a store into a relay's lifecycle: `health()` behind the readiness
//! probe, and SIGTERM starting a drain.
//!
//! ```text
//! cargo run --example readiness
//! ```
//!
//! The standard library has no signal API, so this example simulates the
//! SIGTERM with a timer thread setting the same flag a signal handler would
//! (e.g. one installed with the `signal-hook` crate or `tokio::signal`). On
//! the signal the relay starts a drain: the probe turns 503 so the load
//! balancer stops sending new sessions, existing sessions keep renewing and
//! consuming, and at the deadline the store stops, the expiry driver revokes
//! everything left, and the process exits once `blocking_drained` says so
//! (an async relay awaits `drained()`).

use relaystore::{Error, Health, Store, StoreConfig, TenantId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const GAME: TenantId = TenantId(1);

/// What a readiness endpoint would answer.
fn readiness(store: &Store) -> (u16, &'static str) {
    match store.health() {
        Health::Ready => (200, "ready"),
        // Authorizations are refused (e.g. the expiry driver stalled).
        Health::Degraded { .. } => (503, "degraded"),
        Health::Draining { .. } => (503, "draining"),
        Health::Stopped => (503, "stopped"),
        // Any state added later is not ready either.
        _ => (503, "not ready"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The builder starts the background expiry driver; it stops when the
    // last handle goes.
    let store = Store::builder().config(StoreConfig::default()).build()?;
    let started = Instant::now();
    let t = || format!("{:>5.2}s", started.elapsed().as_secs_f64());

    let lease = store.grant(GAME, "host-1", Duration::from_secs(5), None)?;
    store.publish(GAME, lease.id, "lobby", b"", None)?;
    let ticket = store.begin_join(GAME, "lobby", "late-client", Duration::from_secs(30), None)?;
    println!("{} probe {:?}", t(), readiness(&store));

    // The "signal handler".
    let terminate = Arc::new(AtomicBool::new(false));
    {
        let terminate = terminate.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            terminate.store(true, Ordering::SeqCst);
        });
    }

    // The relay's main loop: renew the host's lease, answer probes.
    let mut draining_since = None;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if terminate.load(Ordering::SeqCst) && draining_since.is_none() {
            let remaining = store.begin_drain(Duration::from_secs(1))?;
            draining_since = Some(Instant::now());
            println!("{} SIGTERM: draining for {:?}", t(), remaining);
            println!(
                "{} new join while draining -> {:?}",
                t(),
                store
                    .begin_join(GAME, "lobby", "new-client", Duration::from_secs(5), None)
                    .map(drop)
            );
            let bound = store.bind_endpoint(
                GAME,
                ticket.attempt,
                &ticket.token,
                "203.0.113.1:4000".parse()?,
            );
            println!(
                "{} existing join binds  -> {:?}",
                t(),
                bound.map(|b| b.addr)
            );
            println!(
                "{} existing join admits -> {:?}",
                t(),
                store.consume(GAME, &ticket.token, None).map(|a| a.client)
            );
        }
        match store.renew(GAME, lease.id, Duration::from_secs(5)) {
            Ok(_) => {}
            Err(e @ Error::ServiceUnavailable { .. }) => {
                println!("{} renew refused: the drain window ended -> {e}", t())
            }
            Err(e) => println!("{} renew -> {e:?}", t()),
        }
        let (code, body) = readiness(&store);
        if draining_since.is_some() {
            println!("{} probe ({code}, {body:?})", t());
        }
        if store.health() == Health::Stopped {
            break;
        }
    }
    // The expiry driver revokes what remained; wait for it before exiting.
    let drained = store.blocking_drained(Duration::from_secs(5));
    println!(
        "{} drained: {drained}; stats {:?}; the host's lease -> {:?}",
        t(),
        store.stats(),
        store.get_lease(GAME, lease.id).map(drop)
    );
    Ok(())
}
