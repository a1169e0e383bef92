//! The store's side of schedules (`src/coord/schedule.rs`): the scheduler lock,
//! the leader check before a run, and the fires' path into the queues.

use crate::base::error::{Error, Result};
use crate::base::ids::TenantId;
use crate::base::sync::Arc;
use crate::contract::events::{Cause, Collection, RecordId};
use crate::contract::names::SCHEDULER_LOCK;
use crate::contract::queue::JobOptions;
use crate::contract::runner::ScheduleRunner;
use crate::contract::runner::SchedulerStep;
use crate::contract::schedule::{ScheduleInfo, ScheduleRun};
use crate::store::{LockGuard, Store};
use std::time::Duration;

impl Store {
    /// Schedules `name`: every interval of `spec` (`@every <interval>`, see
    /// [`parse_every`](crate::contract::rules::parse_every)) a job with `payload`
    /// is enqueued on `queue`, by whichever runner leads the tenant's
    /// schedules ([`run_schedules`](Self::run_schedules)). The first fire
    /// is one interval from now; fires stay on that grid. Scheduling an
    /// existing name again with the same interval, queue and payload
    /// changes nothing (so a retried call is safe: the grid stays);
    /// with anything else, it replaces it and its grid starts now.
    ///
    /// Refused with `InvalidArgument` for a malformed spec or an interval
    /// outside `schedule_interval_min..=schedule_interval_max`, a payload
    /// over `job_payload_bytes_max`; `NotFound` if the queue does not
    /// exist; `CapacityExceeded` past `schedules_per_tenant_max`
    /// (`Tenant(Schedules)`) or `schedules_max` (`Collection(Schedules)`);
    /// `Draining` / `ServiceUnavailable` while the store drains or once it
    /// stopped.
    pub fn schedule(
        &self,
        tenant: TenantId,
        name: &str,
        spec: &str,
        queue: &str,
        payload: &[u8],
    ) -> Result<()> {
        let _in = self.enter();
        let scheduled = self.schedule_steps(tenant, name, spec, queue, payload);
        self.observed(tenant, scheduled)
    }

    fn schedule_steps(
        &self,
        tenant: TenantId,
        name: &str,
        spec: &str,
        queue: &str,
        payload: &[u8],
    ) -> Result<()> {
        self.check_schedule(name, spec, queue, payload)?;
        let now = self.shared.clock.now();
        self.admit_new(now)?;
        self.queue_info(tenant, queue)?;
        self.shared.schedules.schedule(
            tenant,
            Arc::from(name),
            spec,
            Arc::from(queue),
            Arc::from(payload),
            now.as_millis(),
        )
    }

    /// The input rules of a schedule: its name, its queue's, its payload's
    /// size, its spec's grammar and interval.
    pub(in crate::store) fn check_schedule(
        &self,
        name: &str,
        spec: &str,
        queue: &str,
        payload: &[u8],
    ) -> Result<()> {
        self.shared
            .config
            .check_schedule(name, spec, queue, payload)
            .map(drop)
    }

    /// Removes schedule `name` (removal event `Schedules`, cause
    /// `Released`). Jobs it enqueued stay.
    pub fn unschedule(&self, tenant: TenantId, name: &str) -> Result<()> {
        let _in = self.enter();
        self.check_own_name(name)?;
        self.shared.schedules.unschedule(tenant, name)?;
        let id = RecordId::Schedule(Arc::from(name));
        self.emit(Collection::Schedules, tenant, id, Cause::Released);
        Ok(())
    }

    /// The tenant's schedules, by name.
    pub fn schedules(&self, tenant: TenantId) -> Vec<ScheduleInfo> {
        self.consistent(|| {
            let now = self.shared.clock.now().as_millis();
            self.shared.schedules.list(tenant, now)
        })
    }

    /// Tries to become the runner of the tenant's schedules: takes the
    /// reserved lock [`SCHEDULER_LOCK`] for `runner` for `ttl` (renew it
    /// with [`LockGuard::renew`] well within `ttl`). `Ok(None)` while
    /// another runner holds it.
    pub fn try_lead_schedules(
        &self,
        tenant: TenantId,
        runner: &str,
        ttl: Duration,
    ) -> Result<Option<LockGuard>> {
        self.take_lock(tenant, SCHEDULER_LOCK, runner, ttl, None)
    }

    /// Fires every schedule of the leader's tenant that is due: for each,
    /// the fires missed so far (at most
    /// [`SCHEDULE_CATCH_UP_MAX`](crate::SCHEDULE_CATCH_UP_MAX), and at most
    /// what the target queue has room for; the rest skipped) are enqueued
    /// and the schedule moves to its next grid point, in one step. A queue
    /// without room for one job (or missing) leaves the schedule due
    /// (named in [`ScheduleRun::refused`]).
    ///
    /// Refused with [`Error::LeadershipLost`], firing nothing, unless
    /// `leader` holds [`SCHEDULER_LOCK`] when its turn comes: the check and
    /// the fires happen under the tenant's schedule book, so another
    /// runner's run never falls between them. `InvalidArgument` for a
    /// guard of another lock.
    pub fn run_schedules(&self, leader: &LockGuard) -> Result<ScheduleRun> {
        let _in = self.enter();
        if leader.name() != SCHEDULER_LOCK {
            return Err(Error::InvalidArgument {
                reason: "run_schedules needs the scheduler lock's guard",
            });
        }
        self.run_schedules_fenced(leader.tenant(), leader.fence())
    }

    /// [`run_schedules`](Self::run_schedules) for the runner holding the
    /// scheduler lock with `fence` (the engine contract's form).
    pub(in crate::store) fn run_schedules_fenced(
        &self,
        tenant: TenantId,
        fence: u64,
    ) -> Result<ScheduleRun> {
        let options = JobOptions::default();
        self.shared.schedules.run(
            tenant,
            &mut || match self.get_lock(tenant, SCHEDULER_LOCK) {
                Ok(held) if held.fence == fence => Ok(()),
                Ok(_) | Err(Error::NotFound) => Err(Error::LeadershipLost),
                Err(e) => Err(e),
            },
            &|| self.shared.clock.now().as_millis(),
            &mut |queue, payload, n| self.enqueue_what_fits(tenant, queue, payload, n, &options),
        )
    }
}

impl Store {
    /// Enqueues as many of `n` jobs carrying `payload` as `queue` has room
    /// for, at least one: how many it took, or the refusal of a single
    /// one. Each batch is all-or-none, so the batches halve after a
    /// refusal until what is left fits or one job does not (at most about
    /// twice log2(n) tries).
    fn enqueue_what_fits(
        &self,
        tenant: TenantId,
        queue: &str,
        payload: &[u8],
        n: usize,
        options: &JobOptions,
    ) -> Result<u64> {
        let payloads = vec![payload; n];
        let (mut taken, mut batch) = (0, n);
        while taken < n && batch > 0 {
            let size = batch.min(n - taken);
            match self.enqueue_many(tenant, queue, &payloads[..size], options) {
                Ok(_) => taken += size,
                Err(e) if taken == 0 && size == 1 => return Err(e),
                Err(Error::CapacityExceeded { .. }) => batch /= 2,
                Err(e) if taken == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(taken as u64)
    }
}

/// A runner competing to lead one tenant's schedules: each
/// [`step`](Self::step) takes or renews the scheduler lock and, while it
/// leads, fires what is due; [`run`](Self::run) loops until stopped. The
/// step is the engine-neutral [`ScheduleRunner`]'s, over the store (whose
/// futures are ready at once).
#[derive(Debug)]
pub struct Scheduler {
    inner: ScheduleRunner<crate::store::MemoryEngine>,
}

impl Scheduler {
    /// A runner named `runner` for `tenant`'s schedules, holding the
    /// scheduler lock for `ttl` at a time.
    pub fn new(store: &Store, tenant: TenantId, runner: &str, ttl: Duration) -> Self {
        Scheduler {
            inner: ScheduleRunner::new(&store.engine(), tenant, runner, ttl),
        }
    }

    /// Whether this runner held the lock at its last step.
    pub fn is_leader(&self) -> bool {
        self.inner.is_leader()
    }

    /// Renews the lock if this runner leads (or takes it if free), then
    /// fires what is due ([`ScheduleRunner::step`]: the step that finds
    /// the lead lost answers [`Error::LeadershipLost`]).
    pub fn step(&mut self) -> Result<SchedulerStep> {
        ready_now(self.inner.step())
    }

    /// How long to wait after a transient failure
    /// ([`ScheduleRunner::retry_wait`]).
    pub fn retry_wait(&self) -> Duration {
        self.inner.retry_wait()
    }

    #[cfg(feature = "native")]
    /// Steps until `stop` is raised, sleeping between steps on the host's
    /// clock; releases the lock on the way out. A lost lead is competed
    /// for again at once, a transient failure stepped again after
    /// [`retry_wait`](Self::retry_wait); returns the first other error
    /// (the store stopped, say).
    pub fn run(&mut self, stop: &SchedulerStop) -> Result<()> {
        let outcome = loop {
            let wait = match self.step() {
                Ok(step) => step.wait,
                Err(Error::LeadershipLost) => Duration::ZERO,
                Err(e) if e.is_transient() => self.retry_wait(),
                Err(e) => break Err(e),
            };
            if stop.wait(wait) {
                break Ok(());
            }
        };
        let _ = ready_now(self.inner.resign());
        outcome
    }
}

/// The output of one of the store's contract futures, which are complete
/// when made (`std::future::ready`): polled once, with no executor.
fn ready_now<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => {
            unreachable!("the in-memory engine's futures are ready at once")
        }
    }
}

/// Stops a [`Scheduler::run`] loop from another thread, at once.
#[derive(Debug, Default)]
pub struct SchedulerStop {
    stopped: std::sync::Mutex<bool>,
    raised: std::sync::Condvar,
}

impl SchedulerStop {
    /// A stop signal not yet raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal: the loop returns from its current wait.
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.raised.notify_all();
    }

    /// Waits up to `timeout`; true once the signal is raised.
    #[cfg(feature = "native")]
    fn wait(&self, timeout: Duration) -> bool {
        let stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        let (stopped, _) = self
            .raised
            .wait_timeout_while(stopped, timeout, |s| !*s)
            .unwrap_or_else(|p| p.into_inner());
        *stopped
    }
}
