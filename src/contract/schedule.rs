//! Interval schedules: `@every <interval>` fires that enqueue a job, run by
//! whichever runner holds the tenant's scheduler lock.
//!
//! Fires are grid-aligned: a schedule created at `t0` with interval `i` is
//! due at `t0 + k·i` for k = 1, 2, ... A run that finds `n` fires due
//! enqueues `min(n, SCHEDULE_CATCH_UP_MAX)` jobs and moves the schedule to
//! the first grid point after now, all in one step under the tenant's
//! schedule book (rung `Schedule`, held while the jobs are enqueued, all
//! or none): a fire is never enqueued twice, and never half.
//!
//! A run checks that its runner leads (holds the scheduler lock) under the
//! book, and reads the time it fires at there too: a new leader's run
//! waits for the book, so two runners never fire at once, and a runner
//! that has lost the lead fires nothing, whatever happened between its
//! call and its turn.

use crate::base::error::Error;
use std::sync::Arc;
use std::time::Duration;

/// A schedule as [`Store::schedules`](crate::Store::schedules) lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleInfo {
    /// Its name.
    pub name: Arc<str>,
    /// Its spec as given (`@every ...`).
    pub spec: Arc<str>,
    /// Its interval.
    pub interval: Duration,
    /// The queue its fires go to.
    pub queue: Arc<str>,
    /// Time left before its next fire is due (zero if due now).
    pub next_in: Duration,
    /// Fires enqueued so far.
    pub fired: u64,
}

/// What one run of a tenant's schedules did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScheduleRun {
    /// Jobs enqueued, over every schedule.
    pub fired: u64,
    /// Fires skipped: grid points passed beyond `SCHEDULE_CATCH_UP_MAX`,
    /// or beyond the room the target queue had (what fits is enqueued,
    /// and the schedule moves to its next grid point).
    pub skipped: u64,
    /// Schedules whose fires were refused (their target queue missing, or
    /// without room for one more job: the error names its real use): they
    /// stay due and are tried again on the next run.
    pub refused: Vec<(Arc<str>, Error)>,
    /// Time until the earliest schedule is due, if any.
    pub next_in: Option<Duration>,
}
