//! The in-memory job queue hub: each queue's jobs under one mutex (rung
//! `Queue`), settled as of now by every call, and a timing wheel of the
//! hub's own (rung `Wheel`, taken before a queue's mutex, never under it)
//! that holds at most one timer per queue, due at its earliest delay or
//! visibility deadline, so a lapsed claim returns its job (and wakes waiting
//! workers) even if nobody claims. What a queue promises is the contract's
//! (`contract/queue.rs`).

use crate::base::error::{Error, Result, Scope};
use crate::base::faults::{self, StoreFault};
use crate::base::ids::{JobId, TenantId};
use crate::base::name::Name;
use crate::base::sync::{lock_at, Arc, AtomicU64, Mutex, Ordering, Ranked, Rung};
use crate::base::time::{duration_to_millis_ceil, MonoTime};
use crate::base::words::LimitSnapshot;
use crate::contract::config::Limits;
use crate::contract::events::Collection;
use crate::contract::names::{queue_wake_channel as wake_channel, LAPSED};
use crate::contract::queue::{
    ClaimToken, ClaimedJob, Failed, Jitter, JobInfo, JobOptions, JobState, QueueConfig, QueueInfo,
    Unique, UniqueStates,
};
use crate::contract::rules::claim_live;
use crate::contract::rules::QueueLimits;
use crate::mem::named::{view, NameRef, TenantCounts, TenantName};
use crate::mem::quota::Counter;
use crate::mem::shard::{ShardMap, Upsert};
use crate::mem::wheel::{Fired, TimerHandle, Wheel};
use std::collections::BTreeSet;
use std::time::Duration;

/// A dead letter, as the hub lists it.
pub(crate) struct Corpse {
    pub(crate) seq: u64,
    pub(crate) attempts: u32,
    pub(crate) reason: Arc<str>,
    pub(crate) payload: Arc<[u8]>,
}

/// A timer's item: the queue and its serial, so a timer set for a deleted
/// queue never acts on a new queue of the same name.
type TimerItem = (TenantName, u64);

pub(crate) struct QueueHub {
    queues: ShardMap<TenantName, Arc<Queue>>,
    tenant_queues: TenantCounts,
    limits: QueueLimits,
    /// The caps that change at run time: the per-tenant and store-wide
    /// counts and budgets, read whole by each creation.
    live: Arc<LimitSnapshot<Limits>>,
    /// Queues held, against `queues_max`.
    count: Counter,
    /// The queues' `jobs_max` together, against `queue_jobs_total_max`.
    budget_jobs: Counter,
    /// The queues' `bytes_max` together, against `queue_bytes_total_max`.
    budget_bytes: Counter,
    /// Each queue's earliest delay or visibility deadline: at most one
    /// timer per queue (its state's `timer`).
    timers: Mutex<Wheel<TimerItem>>,
    serials: AtomicU64,
    claims: AtomicU64,
    /// The store's incarnation, for the ids of claimed jobs.
    incarnation: u64,
}

pub(crate) struct Queue {
    config: QueueConfig,
    serial: u64,
    key: TenantName,
    /// The queue's own wake channel (reserved name), notified when jobs
    /// become ready while a worker waits.
    pub(crate) wake: Arc<str>,
    /// Workers waiting in `claim_wait` now: a job that becomes ready is
    /// announced on the wake channel only if one is (so an enqueue with
    /// nobody waiting skips the channel lookup). A waiter counts itself
    /// before it claims, and a job is made ready before the count is read
    /// (both sequentially consistent), so either the waiter's claim finds
    /// the job or the enqueue sees the waiter.
    waiters: AtomicU64,
    state: Mutex<State>,
}

/// A worker counted as waiting on one queue until dropped.
pub(crate) struct Waiting {
    queue: Arc<Queue>,
}

impl Waiting {
    /// Whether the queue it counts on is still the one under its name.
    pub(crate) fn serial(&self) -> u64 {
        self.queue.serial
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.queue.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Queue {
    /// The wake channel to notify for jobs that just became ready, if a
    /// worker waits.
    fn announce(&self) -> Option<Arc<str>> {
        (self.waiters.load(Ordering::SeqCst) > 0).then(|| Arc::clone(&self.wake))
    }

    /// The queue's jobs as of `now`, locked: what fell due by then has
    /// moved (delays ended, claims lapsed). Every call that reads or
    /// changes the jobs takes them so, so no call's answer depends on
    /// whether another call, a read included, came first. The sweep is
    /// what wakes workers for the jobs this readies ([`QueueHub::sweep`]).
    fn state_at(&self, now: u64) -> Ranked<'_, State> {
        let mut state = lock_at(Rung::Queue, &self.state);
        state.settle(now);
        state
    }
}

struct Job {
    payload: Arc<[u8]>,
    attempts: u32,
    attempts_max: u32,
    /// Claimed before every job of a higher number when ready.
    priority: u8,
    /// The unique key it was enqueued under, if any.
    unique: Option<Name>,
    at: At,
}

/// A unique key the queue remembers: its job, until when the key is taken
/// whatever became of the job (its window's end, in ms), and the states in
/// which the job keeps it taken after that.
struct Hold {
    seq: u64,
    until: u64,
    states: UniqueStates,
}

impl Hold {
    /// Whether the key is taken at `now`, `job` being the queue's job
    /// under the key (`None` once it left the queue).
    fn takes(&self, now: u64, job: Option<&Job>) -> bool {
        if now < self.until {
            return true;
        }
        let states = self.states;
        job.is_some_and(|job| match job.at {
            At::Ready | At::Delayed(_) => states.waiting,
            At::Claimed { .. } => states.claimed,
            At::Dead(_) => states.dead,
        })
    }
}

impl Job {
    /// Where the job's state puts it in the indexes.
    fn slot(&self) -> Slot {
        self.at.slot(self.priority)
    }

    /// Whether the job has had its last attempt: a failure or a lapse of
    /// its claim now dead-letters it.
    fn spent(&self) -> bool {
        self.attempts >= self.attempts_max
    }
}

/// What a queue holds, as its admission rule counts it: its jobs (every
/// state), their payload bytes, and its dead letters.
#[derive(Clone, Copy)]
struct Contents {
    jobs: usize,
    bytes: usize,
    dead: usize,
}

impl Contents {
    /// Refuses `count` more jobs of `bytes` payload bytes in all if a
    /// queue holding this cannot take them: the one admission rule of
    /// enqueues.
    fn admits(self, config: &QueueConfig, count: usize, bytes: usize) -> Result<()> {
        let refuse = |scope, limit: usize, used: usize| {
            Err(Error::capacity(scope, limit as u64, used as u64))
        };
        let dead_max = config.dead_letters_cap();
        if self.dead >= dead_max {
            return refuse(Scope::QueueDeadLetters, dead_max, self.dead);
        }
        if self.jobs + count > config.jobs_max {
            return refuse(Scope::QueueJobs, config.jobs_max, self.jobs);
        }
        if self.bytes + bytes > config.bytes_max {
            return refuse(Scope::QueueBytes, config.bytes_max, self.bytes);
        }
        Ok(())
    }
}

/// One of a transaction's changes to a queue, as its commit checks them
/// in staging order ([`QueueHub::check_staged`]).
pub(crate) enum Staged {
    /// An enqueue of a payload of this many bytes.
    Enqueue(usize),
    /// An ack of job `seq` under the claim.
    Ack(u64, ClaimToken),
    /// A failure of job `seq` under the claim.
    Fail(u64, ClaimToken),
}

/// A job's state, with what its index is keyed by.
#[derive(Clone, Debug, PartialEq, Eq)]
enum At {
    Ready,
    Delayed(u64),
    Claimed {
        token: u64,
        until: u64,
        worker: Arc<str>,
    },
    Dead(Arc<str>),
}

/// Where a job's state puts it in the indexes.
#[derive(Copy, Clone)]
enum Slot {
    /// Ready, at this priority.
    Ready(u8),
    Delayed(u64),
    Claimed(u64),
    Dead,
}

impl At {
    /// The slot of a job of `priority` in this state.
    fn slot(&self, priority: u8) -> Slot {
        match self {
            At::Ready => Slot::Ready(priority),
            At::Delayed(due) => Slot::Delayed(*due),
            At::Claimed { until, .. } => Slot::Claimed(*until),
            At::Dead(_) => Slot::Dead,
        }
    }
}

/// Jobs by sequence number: numbers the store issues, not a caller's, so
/// a fixed-seed hash is safe.
type Jobs = std::collections::HashMap<u64, Job, ahash::RandomState>;

struct State {
    jobs: Jobs,
    /// Ready jobs by priority, then oldest (lowest id) first.
    ready: BTreeSet<(u8, u64)>,
    /// Delayed jobs by due tick.
    delayed: BTreeSet<(u64, u64)>,
    /// Claimed jobs by the tick their claim lapses.
    claimed: BTreeSet<(u64, u64)>,
    dead: BTreeSet<u64>,
    bytes: usize,
    jitter: Jitter,
    /// The queue's timer, if one is set, and its due tick.
    timer: Option<(TimerHandle, u64)>,
    /// Unique keys remembered: the jobs' held and those whose job left
    /// within its window (at most the queue's `jobs_max`).
    unique: std::collections::HashMap<Name, Hold, ahash::RandomState>,
    /// Keys whose job left the queue, by their window's end: forgotten
    /// once it has passed (unless a new job took the key).
    lingering: BTreeSet<(u64, Name)>,
}

impl State {
    /// The earliest tick something changes by itself: a delay ends or a
    /// claim lapses.
    fn next_due(&self) -> Option<u64> {
        let delayed = self.delayed.first().map(|&(due, _)| due);
        let claimed = self.claimed.first().map(|&(until, _)| until);
        match (delayed, claimed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the queue's timer must be set earlier (or at all).
    fn timer_late(&self) -> bool {
        match (self.next_due(), self.timer) {
            (Some(due), Some((_, set))) => due < set,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// Moves a job to `at`, keeping the indexes in step.
    fn move_to(&mut self, seq: u64, at: At) {
        let job = self.jobs.get_mut(&seq).expect("an indexed job is held");
        let from = job.slot();
        job.at = at;
        let to = job.slot();
        self.unindex(seq, from);
        self.index(seq, to);
    }

    fn insert(&mut self, seq: u64, job: Job) {
        self.bytes += job.payload.len();
        self.index(seq, job.slot());
        self.jobs.insert(seq, job);
    }

    fn remove(&mut self, seq: u64) {
        if let Some(job) = self.jobs.remove(&seq) {
            self.unindex(seq, job.slot());
            self.bytes -= job.payload.len();
            // The key stays remembered until its window ends.
            if let Some(key) = job.unique {
                if let Some(hold) = self.unique.get(&key).filter(|h| h.seq == seq) {
                    self.lingering.insert((hold.until, key));
                }
            }
        }
    }

    /// Forgets the keys whose job left and whose window ended by `now`.
    fn forget_lapsed_keys(&mut self, now: u64) {
        while let Some((until, _)) = self.lingering.first() {
            if *until > now {
                break;
            }
            let (_, key) = self.lingering.pop_first().expect("looked at");
            let gone = self
                .unique
                .get(&key)
                .is_some_and(|hold| !self.jobs.contains_key(&hold.seq));
            if gone {
                self.unique.remove(&key);
            }
        }
    }

    /// Whether an enqueue under `unique` may go in at `now`: the job that
    /// takes the key, refused with `DuplicateJob`; no room for one more
    /// key, `QueueUniqueKeys`. A key no longer taken is forgotten first.
    fn admits_unique(
        &mut self,
        unique: &Unique,
        now: u64,
        config: &QueueConfig,
        incarnation: u64,
    ) -> Result<()> {
        self.forget_lapsed_keys(now);
        if let Some(hold) = self.unique.get(&unique.key) {
            if hold.takes(now, self.jobs.get(&hold.seq)) {
                return Err(Error::DuplicateJob {
                    existing: JobId::new(incarnation, hold.seq),
                });
            }
            self.unique.remove(&unique.key);
        }
        if self.unique.len() >= config.jobs_max {
            let (limit, used) = (config.jobs_max as u64, self.unique.len() as u64);
            return Err(Error::capacity(Scope::QueueUniqueKeys, limit, used));
        }
        Ok(())
    }

    fn index(&mut self, seq: u64, slot: Slot) {
        match slot {
            Slot::Ready(priority) => self.ready.insert((priority, seq)),
            Slot::Delayed(due) => self.delayed.insert((due, seq)),
            Slot::Claimed(until) => self.claimed.insert((until, seq)),
            Slot::Dead => self.dead.insert(seq),
        };
    }

    fn unindex(&mut self, seq: u64, slot: Slot) {
        match slot {
            Slot::Ready(priority) => self.ready.remove(&(priority, seq)),
            Slot::Delayed(due) => self.delayed.remove(&(due, seq)),
            Slot::Claimed(until) => self.claimed.remove(&(until, seq)),
            Slot::Dead => self.dead.remove(&seq),
        };
    }

    /// Moves what is due at `now`: delayed jobs become ready; lapsed claims
    /// return their job to ready, or to the dead letters if that was its
    /// last attempt. Only through [`Queue::state_at`] and the sweep.
    fn settle(&mut self, now: u64) {
        while let Some(&(due, seq)) = self.delayed.first() {
            if due > now {
                break;
            }
            self.move_to(seq, At::Ready);
        }
        while let Some(&(until, seq)) = self.claimed.first() {
            if until > now {
                break;
            }
            if self.jobs[&seq].spent() {
                self.move_to(seq, At::Dead(Arc::from(LAPSED)));
            } else {
                self.move_to(seq, At::Ready);
            }
        }
    }

    /// What the queue holds, as its admission rule counts it.
    fn contents(&self) -> Contents {
        Contents {
            jobs: self.jobs.len(),
            bytes: self.bytes,
            dead: self.dead.len(),
        }
    }

    /// The job under the live claim `token` on job `seq` at `now`: the one
    /// validity rule of every claim operation, checked before any change.
    fn check_claim(&self, seq: u64, token: ClaimToken, now: u64) -> Result<&Job> {
        let job = self.jobs.get(&seq).ok_or(Error::NotFound)?;
        match &job.at {
            At::Claimed {
                token: t, until, ..
            } if claim_live(*t, *until, token.0, now) => Ok(job),
            _ => Err(Error::StaleClaim),
        }
    }
}

const JOB_HASH: ahash::RandomState = ahash::RandomState::with_seeds(
    0x6a09_e667_f3bc_c908,
    0xbb67_ae85_84ca_a73b,
    0x3c6e_f372_fe94_f82b,
    0xa54f_f53a_5f1d_36f1,
);

impl QueueHub {
    pub(crate) fn new(
        limits: QueueLimits,
        live: Arc<LimitSnapshot<Limits>>,
        start: MonoTime,
        incarnation: u64,
    ) -> Self {
        let (count, jobs, bytes) = live.read(|l| {
            let c = l.ceiling(Collection::Queues);
            (c, l.queue_jobs_total_max, l.queue_bytes_total_max)
        });
        QueueHub {
            queues: ShardMap::with_capacity(16),
            tenant_queues: TenantCounts::new(Scope::Tenant(Collection::Queues)),
            count: Counter::new(Scope::Collection(Collection::Queues), count),
            budget_jobs: Counter::new(Scope::QueueJobsTotal, jobs),
            budget_bytes: Counter::new(Scope::QueueBytesTotal, bytes),
            limits,
            live,
            timers: Mutex::new(Wheel::new(start.as_millis())),
            serials: AtomicU64::new(0),
            claims: AtomicU64::new(0),
            incarnation,
        }
    }

    /// The bounds every queue and job is checked against.
    pub(crate) fn limits(&self) -> &QueueLimits {
        &self.limits
    }

    /// Queues held.
    pub(crate) fn len(&self) -> u64 {
        self.count.used()
    }

    /// Queues tenant `tenant` holds, and the cap.
    pub(crate) fn tenant_usage(&self, tenant: TenantId) -> (u64, u64) {
        let cap = self.live.read(|l| l.queues_per_tenant_max);
        (self.tenant_queues.of(tenant), cap)
    }

    /// Sets the counters' own limits to `l`'s (what they report; every
    /// admission takes its limits from the snapshot).
    pub(crate) fn relimit(&self, l: &Limits) {
        self.count.set_limit(l.ceiling(Collection::Queues));
        self.budget_jobs.set_limit(l.queue_jobs_total_max);
        self.budget_bytes.set_limit(l.queue_bytes_total_max);
    }

    fn get(&self, key: NameRef) -> Result<Arc<Queue>> {
        self.queues
            .read(view(&key), Arc::clone)
            .ok_or(Error::NotFound)
    }

    /// Counts a worker as waiting on the queue under `key` (see
    /// `Queue::waiters`), until the returned guard drops.
    pub(crate) fn wait(&self, key: NameRef) -> Result<Waiting> {
        let queue = self.get(key)?;
        queue.waiters.fetch_add(1, Ordering::SeqCst);
        Ok(Waiting { queue })
    }

    /// The serial of the queue under `key` now.
    pub(crate) fn serial(&self, key: NameRef) -> Result<u64> {
        self.queues
            .read(view(&key), |q| q.serial)
            .ok_or(Error::NotFound)
    }

    /// Creates the queue (a retried creation with the same settings finds
    /// it and takes no room); `seed` is the jitter seed if the config has
    /// none.
    pub(crate) fn create(&self, key: TenantName, config: QueueConfig, seed: u64) -> Result<()> {
        self.limits.check(&config)?;
        match self.queues.read(&key, |q| q.config == config) {
            Some(true) => return Ok(()),
            Some(false) => return Err(Error::Exists),
            None => {}
        }
        let caps = self.live.read(|l| {
            let c = l.ceiling(Collection::Queues);
            let budgets = (l.queue_jobs_total_max, l.queue_bytes_total_max);
            (l.queues_per_tenant_max, c, budgets)
        });
        let (per_tenant, ceiling, (jobs_total, bytes_total)) = caps;
        // A queue reserves its whole capacity, so no enqueue needs room
        // the store did not commit to.
        let store_wide = self.tenant_queues.admit(
            key.0,
            per_tenant,
            &[
                (&self.count, 1, ceiling),
                (&self.budget_jobs, config.jobs_max as u64, jobs_total),
                (&self.budget_bytes, config.bytes_max as u64, bytes_total),
            ],
        )?;
        let queue = Arc::new(Queue {
            serial: self.serials.fetch_add(1, Ordering::Relaxed),
            wake: wake_channel(&key.1),
            waiters: AtomicU64::new(0),
            key: key.clone(),
            state: Mutex::new(State {
                jobs: Jobs::with_hasher(JOB_HASH),
                ready: BTreeSet::new(),
                delayed: BTreeSet::new(),
                claimed: BTreeSet::new(),
                dead: BTreeSet::new(),
                bytes: 0,
                jitter: Jitter::seeded(config.jitter_seed.unwrap_or(seed)),
                timer: None,
                // Keys are callers' names: a hasher seeded per queue.
                unique: std::collections::HashMap::with_hasher(ahash::RandomState::new()),
                lingering: BTreeSet::new(),
            }),
            config: config.clone(),
        });
        let (created, _) = self.queues.upsert(key.clone(), |held| match held {
            None => Upsert::Put(queue, Ok(true)),
            Some(q) if q.config == config => Upsert::Keep(Ok(false)),
            Some(_) => Upsert::Keep(Err(Error::Exists)),
        });
        if created == Ok(true) {
            store_wide.commit();
        } else {
            drop(store_wide);
            self.tenant_queues.give(key.0);
        }
        created.map(drop)
    }

    /// Deletes the queue with every job in it; returns it, for its event
    /// and its waiting workers' wake.
    pub(crate) fn delete(&self, key: NameRef) -> Result<Arc<Queue>> {
        let queue = self
            .queues
            .remove_if(view(&key), |_| Ok::<(), ()>(()))
            .and_then(|r| r.ok())
            .ok_or(Error::NotFound)?;
        self.count.release(1);
        self.budget_jobs.release(queue.config.jobs_max as u64);
        self.budget_bytes.release(queue.config.bytes_max as u64);
        self.tenant_queues.give(key.0);
        let mut timers = lock_at(Rung::Wheel, &self.timers);
        if let Some((handle, _)) = lock_at(Rung::Queue, &queue.state).timer.take() {
            timers.cancel(handle);
        }
        Ok(queue)
    }

    /// Sets the queue's timer at its earliest deadline, if it has none that
    /// early. Takes the wheel's lock, then the queue's: never with a map
    /// shard or the queue's lock held.
    fn arm(&self, queue: &Queue) {
        let mut timers = lock_at(Rung::Wheel, &self.timers);
        let mut state = lock_at(Rung::Queue, &queue.state);
        if !state.timer_late() {
            return;
        }
        let due = state.next_due().expect("a late timer has a deadline");
        if let Some((old, _)) = state.timer.take() {
            timers.cancel(old);
        }
        let handle = timers.insert((queue.key.clone(), queue.serial), due);
        state.timer = Some((handle, due));
    }

    /// Enqueues `payloads` (all or none; their sizes and `options`
    /// already checked by the store), ready or delayed until tick
    /// `due`, as sequence numbers
    /// `first`, `first + 1`, ...; returns the wake channel to notify, if
    /// the jobs are ready and a worker waits. `first` reserves one
    /// sequence number per payload (taken when the queue admits them, so
    /// a refused enqueue takes none).
    pub(crate) fn enqueue(
        &self,
        key: NameRef,
        payloads: &[&[u8]],
        options: &JobOptions,
        (now, due): (u64, Option<u64>),
        first: &mut dyn FnMut(u64) -> u64,
    ) -> Result<(u64, Option<Arc<str>>)> {
        // The store checked the input (`Store::check_job`).
        debug_assert!(payloads
            .iter()
            .all(|p| p.len() <= self.limits.payload_bytes_max));
        debug_assert!(options.attempts_max != Some(0));
        let queue = self.get(key)?;
        let config = &queue.config;
        let bytes: usize = payloads.iter().map(|p| p.len()).sum();
        // Broken twin: the waiters are counted before the job is ready.
        let early = faults::active(StoreFault::WaitersReadEarly).then(|| queue.announce());
        let (first, late) = {
            let mut state = queue.state_at(now);
            if let Some(unique) = &options.unique {
                state.admits_unique(unique, now, config, self.incarnation)?;
            }
            state.contents().admits(config, payloads.len(), bytes)?;
            let first = first(payloads.len() as u64);
            if let Some(unique) = &options.unique {
                // One job per key (the store refuses a batch under one).
                let window = duration_to_millis_ceil(unique.window);
                let hold = Hold {
                    seq: first,
                    until: now.saturating_add(window),
                    states: unique.states,
                };
                state.unique.insert(unique.key.clone(), hold);
            }
            for (seq, payload) in (first..).zip(payloads) {
                let at = due.map_or(At::Ready, At::Delayed);
                state.insert(
                    seq,
                    Job {
                        payload: Arc::from(*payload),
                        attempts: 0,
                        attempts_max: options.attempts_max.unwrap_or(config.attempts_max),
                        priority: options.priority,
                        unique: options.unique.as_ref().map(|u| u.key.clone()),
                        at,
                    },
                );
            }
            (first, state.timer_late())
        };
        if late {
            self.arm(&queue);
        }
        let announce = match early {
            Some(early) => early,
            None if due.is_none() => queue.announce(),
            None => None,
        };
        Ok((first, announce))
    }

    /// The queue's configuration.
    pub(crate) fn config(&self, key: NameRef) -> Result<QueueConfig> {
        Ok(self.get(key)?.config.clone())
    }

    /// Whether the queue takes `changes` one after another at `now`, as
    /// [`enqueue`](Self::enqueue), [`ack`](Self::ack) and
    /// [`fail`](Self::fail) would take them: an ack frees its job's room
    /// for the enqueues after it, a failure that dead-letters its job
    /// counts against them. A transaction's check before its commit
    /// writes anything.
    pub(crate) fn check_staged(&self, key: NameRef, changes: &[Staged], now: u64) -> Result<()> {
        let queue = self.get(key)?;
        let state = queue.state_at(now);
        let mut held = state.contents();
        for change in changes {
            match *change {
                Staged::Enqueue(bytes) => {
                    held.admits(&queue.config, 1, bytes)?;
                    held.jobs += 1;
                    held.bytes += bytes;
                }
                Staged::Ack(seq, token) => {
                    let job = state.check_claim(seq, token, now)?;
                    held.jobs -= 1;
                    held.bytes -= job.payload.len();
                }
                Staged::Fail(seq, token) => {
                    let job = state.check_claim(seq, token, now)?;
                    held.dead += usize::from(job.spent());
                }
            }
        }
        Ok(())
    }

    /// Claims up to `max` ready jobs, by priority then oldest first, for `visibility` (the
    /// queue's if `None`).
    pub(crate) fn claim(
        &self,
        key: NameRef,
        worker: &str,
        visibility: Option<Duration>,
        max: usize,
        now: u64,
    ) -> Result<Vec<ClaimedJob>> {
        let queue = self.get(key)?;
        let visibility = visibility.unwrap_or(queue.config.visibility);
        let until = now.saturating_add(duration_to_millis_ceil(visibility));
        let (grabs, late) = {
            let mut state = queue.state_at(now);
            let mut grabs = Vec::new();
            // One copy of the worker's name for the whole claim.
            let worker: Option<Arc<str>> = (!state.ready.is_empty()).then(|| Arc::from(worker));
            while grabs.len() < max {
                let Some(&(_, seq)) = state.ready.first() else {
                    break;
                };
                if faults::active(StoreFault::ClaimSplitHold) {
                    // Broken twin: the job picked is taken under a later
                    // hold, without looking again.
                    drop(state);
                    state = lock_at(Rung::Queue, &queue.state);
                }
                let token = self.claims.fetch_add(1, Ordering::Relaxed) + 1;
                state.move_to(
                    seq,
                    At::Claimed {
                        token,
                        until,
                        worker: Arc::clone(worker.as_ref().expect("ready jobs")),
                    },
                );
                let job = state.jobs.get_mut(&seq).expect("held");
                job.attempts += 1;
                grabs.push(ClaimedJob {
                    id: JobId::new(self.incarnation, seq),
                    claim: ClaimToken(token),
                    attempt: job.attempts,
                    payload: Arc::clone(&job.payload),
                    visibility,
                });
            }
            (grabs, state.timer_late())
        };
        if late {
            self.arm(&queue);
        }
        Ok(grabs)
    }

    /// Acknowledges job `seq` under `token`: the job is done and leaves.
    pub(crate) fn ack(&self, key: NameRef, seq: u64, token: ClaimToken, now: u64) -> Result<()> {
        let queue = self.get(key)?;
        let mut state = queue.state_at(now);
        state.check_claim(seq, token, now)?;
        if faults::active(StoreFault::AckSplitHold) {
            // Broken twin: the job is removed under a later hold, whoever
            // holds it by then.
            drop(state);
            state = lock_at(Rung::Queue, &queue.state);
        }
        state.remove(seq);
        Ok(())
    }

    /// Removes job `seq` at `now`, whatever its state; `NotFound` if the
    /// queue does not hold it.
    pub(crate) fn cancel(&self, key: NameRef, seq: u64, now: u64) -> Result<()> {
        let queue = self.get(key)?;
        let mut state = queue.state_at(now);
        if !state.jobs.contains_key(&seq) {
            return Err(Error::NotFound);
        }
        state.remove(seq);
        Ok(())
    }

    /// Acknowledges each of `acks` (a job's sequence number, or why it has
    /// none, and its claim) under one hold of the queue: each as
    /// [`ack`](Self::ack) would, in order.
    pub(crate) fn ack_many(
        &self,
        key: NameRef,
        acks: &[(Result<u64>, ClaimToken)],
        now: u64,
    ) -> Result<Vec<Result<()>>> {
        let queue = self.get(key)?;
        let mut state = queue.state_at(now);
        Ok(acks
            .iter()
            .map(|(seq, token)| {
                let seq = seq.clone()?;
                state.check_claim(seq, *token, now)?;
                state.remove(seq);
                Ok(())
            })
            .collect())
    }

    /// Extends the live claim `token` on job `seq`: it lapses
    /// `visibility` (the queue's if `None`) from `now`, the same claim,
    /// its attempt unused. Returns the visibility granted.
    pub(crate) fn extend_claim(
        &self,
        key: NameRef,
        seq: u64,
        token: ClaimToken,
        visibility: Option<Duration>,
        now: u64,
    ) -> Result<Duration> {
        let queue = self.get(key)?;
        let visibility = visibility.unwrap_or(queue.config.visibility);
        let until = now.saturating_add(duration_to_millis_ceil(visibility));
        let late = {
            let mut state = queue.state_at(now);
            let job = state.check_claim(seq, token, now)?;
            let At::Claimed { worker, .. } = &job.at else {
                unreachable!("a live claim is a claimed job's")
            };
            let worker = Arc::clone(worker);
            state.move_to(
                seq,
                At::Claimed {
                    token: token.0,
                    until,
                    worker,
                },
            );
            state.timer_late()
        };
        if late {
            self.arm(&queue);
        }
        Ok(visibility)
    }

    /// Puts job `seq`, claimed under `token`, back: ready `delay_ms` after
    /// `now` (at once for 0), the attempt its claim counted given back.
    /// Returns the queue's wake channel when the job is ready now and a
    /// worker waits.
    pub(crate) fn snooze(
        &self,
        key: NameRef,
        seq: u64,
        token: ClaimToken,
        delay_ms: u64,
        now: u64,
    ) -> Result<Option<Arc<str>>> {
        let queue = self.get(key)?;
        let late = {
            let mut state = queue.state_at(now);
            state.check_claim(seq, token, now)?;
            let at = if delay_ms == 0 {
                At::Ready
            } else {
                At::Delayed(now.saturating_add(delay_ms))
            };
            state.move_to(seq, at);
            let job = state.jobs.get_mut(&seq).expect("held");
            job.attempts = job.attempts.saturating_sub(1);
            state.timer_late()
        };
        if late {
            self.arm(&queue);
        }
        Ok(if delay_ms == 0 {
            queue.announce()
        } else {
            None
        })
    }

    /// Fails job `seq` under `token`: it retries after its backoff, or is
    /// dead-lettered with `reason` if that was its last attempt.
    pub(crate) fn fail(
        &self,
        key: NameRef,
        seq: u64,
        token: ClaimToken,
        reason: &str,
        now: u64,
    ) -> Result<Failed> {
        let queue = self.get(key)?;
        let (failed, late) = {
            let mut state = queue.state_at(now);
            let job = state.check_claim(seq, token, now)?;
            let failed = if job.spent() {
                state.move_to(seq, At::Dead(Arc::from(reason)));
                Failed::DeadLettered
            } else {
                let attempt = job.attempts;
                let draw = state.jitter.next();
                let delay = queue.config.backoff.delay(attempt, draw);
                let due = now.saturating_add(delay.as_millis() as u64);
                state.move_to(seq, At::Delayed(due));
                Failed::RetryIn(delay)
            };
            (failed, state.timer_late())
        };
        if late {
            self.arm(&queue);
        }
        Ok(failed)
    }

    /// Job `seq` as it is at `now`.
    pub(crate) fn job(&self, key: NameRef, seq: u64, now: u64) -> Result<JobInfo> {
        let queue = self.get(key)?;
        let state = queue.state_at(now);
        let job = state.jobs.get(&seq).ok_or(Error::NotFound)?;
        let left = |tick: u64| Duration::from_millis(tick.saturating_sub(now));
        let state = match &job.at {
            At::Ready => JobState::Ready,
            At::Delayed(due) => JobState::Delayed {
                ready_in: left(*due),
            },
            At::Claimed { until, worker, .. } => JobState::Claimed {
                worker: Arc::clone(worker),
                lapses_in: left(*until),
            },
            At::Dead(reason) => JobState::Dead {
                reason: Arc::clone(reason),
            },
        };
        Ok(JobInfo {
            state,
            attempts: job.attempts,
            attempts_max: job.attempts_max,
            priority: job.priority,
            payload: Arc::clone(&job.payload),
        })
    }

    /// What the queue holds at `now`.
    pub(crate) fn info(&self, key: NameRef, now: u64) -> Result<QueueInfo> {
        let queue = self.get(key)?;
        let state = queue.state_at(now);
        Ok(QueueInfo {
            ready: state.ready.len(),
            delayed: state.delayed.len(),
            claimed: state.claimed.len(),
            dead: state.dead.len(),
            bytes: state.bytes,
        })
    }

    /// Up to `max` dead letters at `now`, oldest first, from sequence
    /// number `from` on.
    pub(crate) fn dead_letters(
        &self,
        key: NameRef,
        from: u64,
        max: usize,
        now: u64,
    ) -> Result<Vec<Corpse>> {
        let queue = self.get(key)?;
        let state = queue.state_at(now);
        Ok(state
            .dead
            .range(from..)
            .take(max)
            .map(|&seq| {
                let job = &state.jobs[&seq];
                let At::Dead(reason) = &job.at else {
                    unreachable!("an indexed dead letter is dead")
                };
                Corpse {
                    seq,
                    attempts: job.attempts,
                    reason: Arc::clone(reason),
                    payload: Arc::clone(&job.payload),
                }
            })
            .collect())
    }

    /// Returns dead letter `seq` to ready with its attempts reset; returns
    /// the wake channel to notify, if a worker waits.
    pub(crate) fn requeue_dead(
        &self,
        key: NameRef,
        seq: u64,
        now: u64,
    ) -> Result<Option<Arc<str>>> {
        let queue = self.get(key)?;
        {
            let mut state = queue.state_at(now);
            if !state.dead.contains(&seq) {
                return Err(Error::NotFound);
            }
            state.move_to(seq, At::Ready);
            state.jobs.get_mut(&seq).expect("held").attempts = 0;
        }
        Ok(queue.announce())
    }

    /// Drops every dead letter at `now`; returns how many.
    pub(crate) fn purge_dead(&self, key: NameRef, now: u64) -> Result<usize> {
        let queue = self.get(key)?;
        let mut state = queue.state_at(now);
        let dead: Vec<u64> = state.dead.iter().copied().collect();
        for &seq in &dead {
            state.remove(seq);
        }
        Ok(dead.len())
    }

    /// Fires the timers due at `now`: settles each queue and sets its next
    /// timer. Returns the wake channels of queues with ready jobs and a
    /// waiting worker.
    pub(crate) fn sweep(&self, now: u64) -> Vec<(TenantId, Arc<str>)> {
        let mut fired: Vec<Fired<TimerItem>> = Vec::new();
        lock_at(Rung::Wheel, &self.timers).advance(now, &mut fired);
        let mut woken = Vec::new();
        for Fired {
            item: (key, serial),
            handle,
            ..
        } in fired
        {
            let Some(queue) = self.queues.read(&key, Arc::clone) else {
                continue;
            };
            if queue.serial != serial {
                continue;
            }
            let (ready, late) = {
                let mut state = lock_at(Rung::Queue, &queue.state);
                if state.timer.is_some_and(|(h, _)| h == handle) {
                    state.timer = None;
                }
                state.settle(now);
                // Every ready job, not only those this settling moved: a
                // call before the sweep may have readied some, and it
                // wakes no one (`Queue::state_at`). The timer was due at
                // or before their due tick, so it fires for them here.
                (!state.ready.is_empty(), state.timer_late())
            };
            if late {
                self.arm(&queue);
            }
            if let Some(wake) = queue.announce().filter(|_| ready) {
                woken.push((key.0, wake));
            }
        }
        woken
    }

    /// The first difference between the queues and what is derived from
    /// them: counts, budgets, each job in exactly the index of its state,
    /// bytes, and a timer at or before every queue's earliest deadline.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn audit(&self) -> std::result::Result<(), String> {
        let mut queues = Vec::new();
        self.queues
            .for_each(|key, queue| queues.push((key.clone(), Arc::clone(queue))));
        if queues.len() as u64 != self.count.used() {
            return Err(format!(
                "queues: {} held, {} admitted",
                queues.len(),
                self.count.used()
            ));
        }
        let jobs: u64 = queues.iter().map(|(_, q)| q.config.jobs_max as u64).sum();
        let bytes: u64 = queues.iter().map(|(_, q)| q.config.bytes_max as u64).sum();
        if (jobs, bytes) != (self.budget_jobs.used(), self.budget_bytes.used()) {
            return Err("queues: the store-wide budgets differ from the queues".into());
        }
        let mut per_tenant = std::collections::BTreeMap::<TenantId, u64>::new();
        for (TenantName(tenant, name), queue) in &queues {
            *per_tenant.entry(*tenant).or_default() += 1;
            let timers = lock_at(Rung::Wheel, &self.timers);
            let state = lock_at(Rung::Queue, &queue.state);
            let mut indexed = 0;
            for (&seq, job) in &state.jobs {
                let in_index = match job.slot() {
                    Slot::Ready(priority) => state.ready.contains(&(priority, seq)),
                    Slot::Delayed(due) => state.delayed.contains(&(due, seq)),
                    Slot::Claimed(until) => state.claimed.contains(&(until, seq)),
                    Slot::Dead => state.dead.contains(&seq),
                };
                if !in_index {
                    return Err(format!(
                        "queue {name}: job {seq} is not in its state's index"
                    ));
                }
                indexed += 1;
                if job.attempts > job.attempts_max {
                    return Err(format!("queue {name}: job {seq} is past its attempts"));
                }
            }
            let in_indexes =
                state.ready.len() + state.delayed.len() + state.claimed.len() + state.dead.len();
            if in_indexes != indexed {
                return Err(format!("queue {name}: a job is in two states, or gone"));
            }
            let held: usize = state.jobs.values().map(|j| j.payload.len()).sum();
            if held != state.bytes
                || state.jobs.len() > queue.config.jobs_max
                || state.bytes > queue.config.bytes_max
            {
                return Err(format!("queue {name}: its jobs disagree with its counts"));
            }
            if let Some(due) = state.next_due() {
                match state.timer {
                    Some((handle, set)) if set <= due && timers.contains(handle) => {}
                    _ => return Err(format!("queue {name}: a deadline with no timer before it")),
                }
            }
        }
        if self.tenant_queues.snapshot() != per_tenant {
            return Err("queues: the per-tenant counts differ from the queues".into());
        }
        Ok(())
    }
}
