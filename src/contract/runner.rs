//! The schedule runner for any engine: the one step protocol of a relay
//! instance competing to lead a tenant's schedules (SPEC §10).
//!
//! Each step renews the scheduler lock ([`SCHEDULER_LOCK`]) if this
//! runner holds it, or tries to take it, and fires what is due while it
//! leads. A renewal refused (the lock expired, was taken or revoked, or
//! the store restarted), or a run refused with
//! [`Error::LeadershipLost`], ends the lead: that step answers
//! `LeadershipLost`, and the next one competes again. A transient failure
//! ([`Error::is_transient`]: the backend unreachable, say) ends nothing:
//! the runner keeps its fence, the step answers the error, and the next
//! step, after [`ScheduleRunner::retry_wait`], renews with the same fence.
//! The in-memory store's [`Scheduler`](crate::Scheduler) is this runner
//! over the [`Store`](crate::Store), with a blocking loop around it.

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
/// let wait = match runner.step().await {
///     Ok(step) => {
///         if let Some(run) = step.run {
///             println!("fired {}", run.fired);
///         }
///         step.wait
///     }
///     // Another runner leads now; compete again at the next step.
///     Err(relaystore::Error::LeadershipLost) => Duration::ZERO,
///     // The lock is still this runner's: renew it soon.
///     Err(e) if e.is_transient() => runner.retry_wait(),
///     Err(e) => return Err(e),
/// };
/// // ... sleep `wait` on the executor, step again; when shutting down:
/// runner.resign().await?;
/// # let _ = wait;
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
    /// Transient failures in a row (the backoff's exponent).
    failures: u32,
}

/// The first wait after a transient failure; each failure in a row
/// doubles it, up to a third of the lock's TTL (the renewal cadence).
const RETRY_WAIT_MIN: Duration = Duration::from_millis(10);

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
            failures: 0,
        }
    }

    /// How long to wait before stepping again after a transient failure:
    /// 10 ms, doubled for each failure in a row before the
    /// last, and at most a third of the lock's TTL, so a leader still
    /// renews within its TTL once the backend answers again. Zero when
    /// the last step did not fail transiently.
    pub fn retry_wait(&self) -> Duration {
        if self.failures == 0 {
            return Duration::ZERO;
        }
        let doubled = RETRY_WAIT_MIN.saturating_mul(1 << (self.failures - 1).min(16));
        doubled.min(self.ttl / 3)
    }

    /// Whether this runner held the lock at its last step.
    pub fn is_leader(&self) -> bool {
        self.fence.is_some()
    }

    /// Renews the lock if this runner leads (or takes it if free), then
    /// fires what is due. The step's `wait` is until the next fire, and at
    /// most a third of the lock's TTL (the renewal cadence).
    ///
    /// # Errors
    ///
    /// [`Error::LeadershipLost`] from the step that finds the lead lost
    /// (a renewal refused, or a run refused for the fence); the next step
    /// competes again. A transient error ([`Error::is_transient`]) keeps
    /// the lead: step again after [`retry_wait`](Self::retry_wait).
    /// Anything else is the engine's answer (a stopped store, say).
    pub async fn step(&mut self) -> Result<SchedulerStep> {
        let outcome = self.try_step().await;
        match &outcome {
            Err(e) if e.is_transient() => self.failures = self.failures.saturating_add(1),
            _ => self.failures = 0,
        }
        outcome
    }

    async fn try_step(&mut self) -> Result<SchedulerStep> {
        if let Some(fence) = self.fence {
            match self
                .engine
                .renew_lock(self.tenant, SCHEDULER_LOCK, fence, self.ttl)
                .await
            {
                Ok(_) => {}
                // The lock may still be this runner's: keep the fence and
                // renew it again at the next step.
                Err(e) if e.is_transient() => return Err(e),
                Err(_) => {
                    self.fence = None;
                    return Err(Error::LeadershipLost);
                }
            }
        } else {
            self.fence = self
                .engine
                .try_lead_schedules(self.tenant, &self.runner, self.ttl)
                .await?
                .map(|lock| lock.fence);
        }
        let cadence = self.ttl / 3;
        let Some(fence) = self.fence else {
            return Ok(SchedulerStep {
                run: None,
                wait: cadence,
            });
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
                Err(Error::LeadershipLost)
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
