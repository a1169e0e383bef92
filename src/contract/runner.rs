//! The schedule runner for any engine: the one step protocol of a relay
//! instance competing to lead a tenant's schedules (SPEC §10).
//!
//! Each step renews the scheduler lock ([`SCHEDULER_LOCK`]) if this
//! runner holds it, or tries to take it, and fires what is due while it
//! leads; a renewal that fails, or a run refused with
//! [`Error::LeadershipLost`], ends the lead without an error. The
//! in-memory store's [`Scheduler`](crate::Scheduler) is this runner over
//! the [`Store`](crate::Store), with a blocking loop around it.

use crate::base::error::{Error, Result};
use crate::base::ids::TenantId;
use crate::base::sync::Arc;
use crate::contract::engine::Engine;
use crate::contract::names::SCHEDULER_LOCK;
use crate::contract::schedule::ScheduleRun;
use std::time::Duration;

/// What one [`Scheduler::step`](crate::Scheduler::step) did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerStep {
    /// The run, if this runner leads.
    pub run: Option<ScheduleRun>,
    /// How long to wait before the next step: until the next fire is due,
    /// and at most a third of the lock's TTL (the renewal cadence).
    pub wait: Duration,
}

/// A runner competing to lead one tenant's schedules on engine `E`: call
/// [`step`](Self::step) again after each step's `wait`.
///
/// ```
/// # async fn demo<E: relaystore::Engine>(engine: &E) -> Result<(), relaystore::Error> {
/// use relaystore::{ScheduleRunner, TenantId};
/// use std::time::Duration;
///
/// let mut runner = ScheduleRunner::new(engine, TenantId(1), "relay-a", Duration::from_secs(15));
/// let step = runner.step().await?;
/// if let Some(run) = step.run {
///     println!("fired {}", run.fired);
/// }
/// // ... sleep step.wait on the executor, step again; when shutting down:
/// runner.resign().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ScheduleRunner<E: Engine> {
    engine: E,
    tenant: TenantId,
    runner: Arc<str>,
    ttl: Duration,
    /// The fence of the scheduler lock while this runner holds it.
    fence: Option<u64>,
}

impl<E: Engine> ScheduleRunner<E> {
    /// A runner named `runner` for `tenant`'s schedules, holding the
    /// scheduler lock for `ttl` at a time.
    pub fn new(engine: &E, tenant: TenantId, runner: &str, ttl: Duration) -> Self {
        ScheduleRunner {
            engine: engine.clone(),
            tenant,
            runner: Arc::from(runner),
            ttl,
            fence: None,
        }
    }

    /// Whether this runner held the lock at its last step.
    pub fn is_leader(&self) -> bool {
        self.fence.is_some()
    }

    /// Renews the lock if this runner leads (or takes it if free), then
    /// fires what is due. Losing the lead is not an error: the step
    /// reports no run. The step's `wait` is until the next fire, and at
    /// most a third of the lock's TTL (the renewal cadence).
    pub async fn step(&mut self) -> Result<SchedulerStep> {
        if let Some(fence) = self.fence {
            let renewed = self
                .engine
                .renew_lock(self.tenant, SCHEDULER_LOCK, fence, self.ttl)
                .await;
            if renewed.is_err() {
                self.fence = None;
            }
        }
        if self.fence.is_none() {
            self.fence = self
                .engine
                .try_lead_schedules(self.tenant, &self.runner, self.ttl)
                .await?
                .map(|lock| lock.fence);
        }
        let cadence = self.ttl / 3;
        let idle = SchedulerStep {
            run: None,
            wait: cadence,
        };
        let Some(fence) = self.fence else {
            return Ok(idle);
        };
        match self.engine.run_schedules(self.tenant, fence).await {
            Ok(run) => {
                let wait = run.next_in.map_or(cadence, |n| n.min(cadence));
                Ok(SchedulerStep {
                    run: Some(run),
                    wait,
                })
            }
            Err(Error::LeadershipLost) => {
                self.fence = None;
                Ok(idle)
            }
            Err(e) => Err(e),
        }
    }

    /// Gives the lock up if this runner holds it, so another runner can
    /// lead at its next step instead of after the lock's TTL.
    pub async fn resign(&mut self) -> Result<()> {
        match self.fence.take() {
            Some(fence) => {
                self.engine
                    .release_lock(self.tenant, SCHEDULER_LOCK, fence)
                    .await
            }
            None => Ok(()),
        }
    }
}
