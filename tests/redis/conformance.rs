//! The conformance suite on the Redis engine: its harness (fresh engines,
//! a namespace each, on one target) and the run of one part of the suite
//! on one target. Time is real here: the unit is 100 ms and `advance`
//! sleeps (deadlines come from the server's clock). The parts run from
//! three test binaries (`tests/redis_conformance_*.rs`), so that each
//! stays short.

use super::{block_on, connect_fresh, fresh_namespace, replicated_target, targets, Target};
use relaystore::conformance::{
    self, Failure, Harness, QUEUE_CHECKS, RELAY_CHECKS, STREAM_CHECKS, TX_CHECKS, WAKE_CHECKS,
};
use relaystore::redis::RedisEngine;
use relaystore::{Result, StoreConfig};
use std::sync::Mutex;
use std::time::Duration;

/// Fresh engines (a namespace each) on one Redis target.
pub struct RedisHarness {
    target: Target,
    engines: Mutex<Vec<RedisEngine>>,
}

impl Harness for RedisHarness {
    type Engine = RedisEngine;

    fn unit(&self) -> Duration {
        Duration::from_millis(100)
    }

    async fn engine(&self, config: StoreConfig) -> Result<RedisEngine> {
        let engine = connect_fresh(&self.target, &fresh_namespace("conformance"), config).await?;
        self.engines.lock().unwrap().push(engine.clone());
        Ok(engine)
    }

    async fn advance(&self, elapsed: Duration) {
        // The engine decides by the server's clock at each call, so once
        // `elapsed` has passed here it has passed there too; then a sweep
        // settles what expired (the sweeper loop would within an
        // interval), and the tenants that hold nothing are forgotten (the
        // sweeper holder does it once a minute).
        tokio::time::sleep(elapsed).await;
        let engines = self.engines.lock().unwrap().clone();
        for engine in engines {
            match engine.sweep().await {
                // A handle an earlier check drained has stopped.
                Ok(_) | Err(relaystore::Error::ServiceUnavailable { .. }) => {}
                Err(e) => panic!("a sweep: {e:?}"),
            }
            match engine.forget_idle_tenants().await {
                Ok(_) | Err(relaystore::Error::ServiceUnavailable { .. }) => {}
                Err(e) => panic!("forgetting idle tenants: {e:?}"),
            }
        }
    }
}

/// Every check passes on both targets (the last relay check to,
/// store-wide ceilings, with ADR 0031): the failures are asserted to be
/// none.
const NOT_YET: &[&str] = &[];

/// Which checks a test runs.
#[derive(Clone, Copy)]
pub enum Suite {
    /// The relay records, but for their lifecycle.
    Relay,
    /// The relay records' lifecycle (`lifecycle::`: cascades, revocation,
    /// restart, drain, removal events).
    Lifecycle,
    /// Wake channels.
    Wakes,
    /// Streams.
    Streams,
    /// Job queues, the outbox and schedules.
    Queues,
    /// Transactions.
    Tx,
}

/// Runs `suite` on the configured target called `name`.
pub fn checks_on(name: &str, suite: Suite) {
    let mut all = targets();
    if name == "replicated" {
        all.push(replicated_target());
    }
    let chosen: Vec<Target> = all.into_iter().filter(|t| t.name == name).collect();
    assert_eq!(chosen.len(), 1, "no target called {name}");
    for target in chosen {
        let harness = RedisHarness {
            target: target.clone(),
            engines: Mutex::new(Vec::new()),
        };
        let (count, failures): (usize, Vec<Failure>) = block_on(async {
            match suite {
                Suite::Relay | Suite::Lifecycle => {
                    let lifecycle = matches!(suite, Suite::Lifecycle);
                    let part = |name: &str| name.starts_with("lifecycle::") == lifecycle;
                    let count = RELAY_CHECKS.iter().filter(|name| part(name)).count();
                    (count, conformance::run_relay_where(&harness, part).await)
                }
                Suite::Wakes => (WAKE_CHECKS.len(), conformance::run_wakes(&harness).await),
                Suite::Streams => (
                    STREAM_CHECKS.len(),
                    conformance::run_streams(&harness).await,
                ),
                Suite::Queues => (QUEUE_CHECKS.len(), conformance::run_queues(&harness).await),
                Suite::Tx => (TX_CHECKS.len(), conformance::run_tx(&harness).await),
            }
        });
        eprintln!("{}: {count} checks, {} failed", target.name, failures.len());
        let failed: Vec<&str> = failures.iter().map(|f| f.check).collect();
        let report: Vec<String> = failures.iter().map(ToString::to_string).collect();
        assert_eq!(failed, NOT_YET, "{}:\n{}", target.name, report.join("\n"));
    }
}
