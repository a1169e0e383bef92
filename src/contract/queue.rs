//! Job queues: at-least-once work with claims, bounded retries and a
//! dead-letter set.
//!
//! A job is in exactly one of four states: *ready* (claimable now),
//! *delayed* (claimable from a tick on: an enqueue delay, or a retry's
//! backoff), *claimed* (held by one live claim until its visibility
//! lapses) or *dead* (out of attempts; kept until requeued or purged).
//! Claims hand out ready jobs by priority (0 first, down to
//! [`PRIORITY_MAX`]), oldest first (by id) within a priority, and a job has
//! at most one live claim. Every claim operation (ack, fail) checks the claim
//! before it changes anything: a stale, foreign or lapsed claim is refused
//! with [`Error::StaleClaim`](crate::Error::StaleClaim) and the job stays exactly as it was.
//!
//! A failed job is delayed by an equal-jitter exponential backoff
//! ([`Backoff`]); a claim whose visibility lapses returns the job to ready
//! and uses up its attempt; a job whose last attempt failed or lapsed goes
//! to the dead-letter set. Jitter comes from a per-queue generator seeded
//! at creation ([`QueueConfig::jitter_seed`]), so the same operations on a
//! `ManualClock` give the same delays.
//!
//! Each queue has one mutex (rung `Queue`) over its state. Delays and
//! visibility deadlines are settled lazily by every claim, and driven by a
//! timing wheel of the hub's own (rung `Wheel`, taken before a queue's
//! mutex, never under it): each queue holds at most one timer, due at its
//! earliest delay or visibility deadline, so a lapsed claim returns its job
//! (and wakes waiting workers) even if nobody claims.

use crate::base::ids::JobId;
use crate::base::name::Name;
use crate::base::time::duration_to_millis_ceil;
use crate::contract::settings::settings;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How long a failed job waits before its next attempt: an equal-jitter
/// exponential backoff. After attempt `n` (1-based) the capped backoff is
/// `min(max, base * 2^(n-1))`; half of it is waited for sure, the other
/// half is drawn uniformly (to the millisecond), so retries of jobs that
/// failed together spread out but none comes back sooner than half the
/// backoff.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Backoff {
    /// The backoff after the first attempt, before jitter.
    pub base: Duration,
    /// The largest backoff, before jitter.
    pub max: Duration,
}

impl Backoff {
    /// The backoff after attempt `attempt` (1-based), before jitter.
    pub fn capped(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(63);
        let base = duration_to_millis_ceil(self.base);
        let max = duration_to_millis_ceil(self.max);
        let ms = base
            .checked_mul(1u64 << doublings)
            .map_or(max, |ms| ms.min(max));
        Duration::from_millis(ms)
    }

    /// The delay after attempt `attempt` for the random word `draw`: half
    /// the capped backoff, plus `draw` reduced to between zero and the
    /// other half (inclusive), in whole milliseconds.
    pub fn delay(&self, attempt: u32, draw: u64) -> Duration {
        let capped = self.capped(attempt).as_millis() as u64;
        let fixed = capped / 2;
        let spread = capped - fixed;
        Duration::from_millis(fixed + draw % (spread + 1))
    }
}

/// The generator a queue draws its jitter from: SplitMix64, seeded per
/// queue. Not a secret: jitter only spreads retries out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jitter(u64);

impl Jitter {
    /// The generator a queue created with `seed` starts from.
    pub fn seeded(seed: u64) -> Self {
        Jitter(seed)
    }

    /// The next random word.
    #[allow(clippy::should_implement_trait)] // Not an iterator: it never ends.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

settings! {
/// A queue's settings, chosen when it is created; every job takes the
/// queue's unless its [`JobOptions`] say otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct QueueConfig {
    /// Most jobs held, in every state (dead letters keep their slot until
    /// requeued or purged). At most `queue_jobs_max`.
    pub jobs_max: usize = 10_000,
    /// Most payload bytes held, every state together (the default is 16
    /// MiB). At most `queue_bytes_max`.
    pub bytes_max: usize = 16 << 20,
    /// Dead letters at which the queue stops taking jobs (enqueue refused
    /// with `CapacityExceeded`, scope `QueueDeadLetters`) until they are
    /// requeued or purged. From 1 to `jobs_max`; `None`:
    /// a tenth of `jobs_max`, at least 1 ([`dead_letters_cap`](Self::dead_letters_cap)),
    /// so a smaller `jobs_max` alone never contradicts it.
    pub dead_letters_max: Option<usize> = None,
    /// How long a claim holds its jobs unless the claim says otherwise.
    pub visibility: Duration = Duration::from_secs(300),
    /// Claims a job gets before it is dead-lettered.
    pub attempts_max: u32 = 3,
    /// The retry backoff (its `max` at most `ttl_max`).
    pub backoff: Backoff = Backoff {
        base: Duration::from_secs(5),
        max: Duration::from_secs(300),
    },
    /// The seed of the queue's jitter ([`Jitter`]); `None` draws one from
    /// the OS at creation.
    pub jitter_seed: Option<u64> = None,
}
}

impl QueueConfig {
    /// The dead letters at which the queue stops taking jobs:
    /// `dead_letters_max`, or a tenth of `jobs_max` (at least 1) when it
    /// is `None`.
    pub fn dead_letters_cap(&self) -> usize {
        self.dead_letters_max.unwrap_or((self.jobs_max / 10).max(1))
    }
}

/// Which states of a job keep its unique key taken once the key's window
/// has passed ([`Unique::states`]). The default: waiting (ready or
/// delayed) and claimed, so a key is free again once its job is acked,
/// cancelled or dead.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct UniqueStates {
    /// Ready or delayed (an enqueue delay, a retry's backoff).
    pub waiting: bool,
    /// Held by a live claim.
    pub claimed: bool,
    /// A dead letter, until requeued or purged.
    pub dead: bool,
}

impl Default for UniqueStates {
    fn default() -> Self {
        UniqueStates {
            waiting: true,
            claimed: true,
            dead: false,
        }
    }
}

/// A unique job's key and what keeps it taken ([`JobOptions::unique`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Unique {
    /// The key, unique within the queue (a caller's name: at most
    /// `name_bytes_max` bytes).
    pub key: Name,
    /// For this long after its job is enqueued the key is taken whatever
    /// became of the job, acked or cancelled included (at most `ttl_max`;
    /// default zero).
    pub window: Duration,
    /// Past the window, the key stays taken while its job is in one of
    /// these states.
    pub states: UniqueStates,
}

impl Unique {
    /// Key `key`, no window, the default states.
    pub fn key(key: &str) -> Self {
        Unique {
            key: Name::new(key),
            window: Duration::ZERO,
            states: UniqueStates::default(),
        }
    }

    /// The same, taken for `window` after the enqueue whatever becomes of
    /// the job.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The same, taken past the window while the job is in `states`.
    pub fn states(mut self, states: UniqueStates) -> Self {
        self.states = states;
        self
    }
}

/// The lowest job priority: priorities run from 0 (claimed first, the
/// default) to this (claimed last), four levels.
pub const PRIORITY_MAX: u8 = 3;

/// Per-job overrides of the queue's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct JobOptions {
    /// Not claimable before this much time has passed (at most `ttl_max`).
    pub delay: Duration,
    /// Not claimable before this wall-clock time, by the engine's clock
    /// (the store's [`Clock::wall`](crate::time::Clock::wall) in memory,
    /// the server's on Redis): a time past or now is ready at once, one
    /// more than `ttl_max` away is refused. Exclusive with `delay`. The
    /// wait is fixed at the enqueue (in a transaction, when it is staged):
    /// a later jump of the wall clock does not move it.
    pub run_at: Option<SystemTime>,
    /// Claims the job gets before it is dead-lettered, instead of the
    /// queue's.
    pub attempts_max: Option<u32>,
    /// Its priority: ready jobs of priority 0 (the default) are claimed
    /// before those of 1, and so on to [`PRIORITY_MAX`]; oldest first
    /// within a priority. Above `PRIORITY_MAX` is `InvalidArgument`. A job
    /// keeps its priority through retries, snoozes and a requeue from the
    /// dead letters.
    pub priority: u8,
    /// Unique by key within the queue: while the key is taken (by a job
    /// enqueued under it less than its `window` ago, or one in one of its
    /// `states`), an enqueue under it is refused with
    /// [`Error::DuplicateJob`](crate::Error::DuplicateJob) naming that job,
    /// and nothing is enqueued. A queue remembers at most `jobs_max`
    /// unique keys (scope `QueueUniqueKeys`). One job per key: a batch of
    /// more than one under a unique key is `InvalidArgument`, and so is a
    /// unique job staged in a transaction.
    pub unique: Option<Unique>,
    /// An idempotency key: a repeat of the enqueue (the same queue,
    /// payloads and options, under the same key, within
    /// `idempotency_ttl`) returns the jobs it made instead of making
    /// more, so an enqueue that failed with `may_have_run` is safe to
    /// retry; other parameters under the key are
    /// [`Error::IdempotencyMismatch`](crate::Error::IdempotencyMismatch).
    /// The key counts under the tenant's `idempotency_max` while it is
    /// remembered. Payloads are compared by a digest, not kept.
    pub idempotency_key: Option<Name>,
}

impl JobOptions {
    /// Claimable only after `delay`.
    pub fn delayed(delay: Duration) -> Self {
        JobOptions {
            delay,
            ..Self::default()
        }
    }

    /// Claimable from `when` on (see [`run_at`](Self::run_at)).
    pub fn at(when: SystemTime) -> Self {
        JobOptions {
            run_at: Some(when),
            ..Self::default()
        }
    }

    /// How long from `wall_now` the job waits: `run_at`'s distance (none
    /// if it has come), else `delay`.
    pub(crate) fn delay_from(&self, wall_now: SystemTime) -> Duration {
        match self.run_at {
            Some(at) => at.duration_since(wall_now).unwrap_or(Duration::ZERO),
            None => self.delay,
        }
    }

    /// The same, with `attempts_max` claims.
    pub fn with_attempts_max(mut self, attempts_max: u32) -> Self {
        self.attempts_max = Some(attempts_max);
        self
    }

    /// The same, unique by `unique`'s key (see [`unique`](Self::unique)).
    pub fn with_unique(mut self, unique: Unique) -> Self {
        self.unique = Some(unique);
        self
    }

    /// The same, at `priority` (see [`priority`](Self::priority)).
    pub fn with_priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// The same, under an idempotency key (see
    /// [`idempotency_key`](Self::idempotency_key)).
    pub fn with_idempotency_key(mut self, key: &str) -> Self {
        self.idempotency_key = Some(Name::new(key));
        self
    }
}

/// A claim on one job: what [`ack`](crate::Store::ack) and
/// [`fail`](crate::Store::fail) must show. Valid while it is the job's
/// live claim: not superseded, and its visibility not lapsed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClaimToken(pub(crate) u64);

impl ClaimToken {
    /// The token as a number, to send it elsewhere.
    pub fn to_bits(self) -> u64 {
        self.0
    }

    /// Inverse of [`to_bits`](Self::to_bits).
    pub fn from_bits(bits: u64) -> Self {
        ClaimToken(bits)
    }
}

/// Where a job is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Claimable now.
    Ready,
    /// Claimable once `ready_in` has passed (an enqueue delay or a retry's
    /// backoff).
    Delayed {
        /// Time left before it is ready.
        ready_in: Duration,
    },
    /// Held by a live claim.
    Claimed {
        /// The worker that claimed it.
        worker: Arc<str>,
        /// Time left before the claim lapses.
        lapses_in: Duration,
    },
    /// Out of attempts.
    Dead {
        /// Why its last attempt ended.
        reason: Arc<str>,
    },
}

/// A job as [`Store::job`](crate::Store::job) reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobInfo {
    /// Where it is.
    pub state: JobState,
    /// Claims it has had.
    pub attempts: u32,
    /// Claims it gets before it is dead-lettered.
    pub attempts_max: u32,
    /// Its priority (0 is claimed first).
    pub priority: u8,
    /// Its payload.
    pub payload: Arc<[u8]>,
}

/// What a queue holds, by state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QueueInfo {
    /// Jobs claimable now.
    pub ready: usize,
    /// Jobs waiting for a delay or a backoff.
    pub delayed: usize,
    /// Jobs held by live claims.
    pub claimed: usize,
    /// Dead letters.
    pub dead: usize,
    /// Payload bytes held, every state together.
    pub bytes: usize,
}

/// What a failure did to the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failed {
    /// It will be claimable again after this backoff.
    RetryIn(Duration),
    /// That was its last attempt: it is a dead letter now.
    DeadLettered,
}

/// A job that ran out of attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    /// The job.
    pub id: JobId,
    /// Claims it had.
    pub attempts: u32,
    /// Why its last attempt ended (the worker's `fail` reason, or
    /// `visibility lapsed`).
    pub reason: Arc<str>,
    /// Its payload.
    pub payload: Arc<[u8]>,
}

/// One job handed to a worker by a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The job.
    pub id: JobId,
    /// The claim, for [`ack`](crate::Store::ack) and
    /// [`fail`](crate::Store::fail).
    pub claim: ClaimToken,
    /// Which attempt this is (1 for the first claim).
    pub attempt: u32,
    /// The job's payload.
    pub payload: Arc<[u8]>,
    /// How long the claim holds the job: past this, it lapses and the job
    /// returns to the queue (using up this attempt).
    pub visibility: Duration,
}
