//! The store's side of job queues (`src/coord/queue.rs`): names, ids, the
//! lifecycle, the clock, and the wakes that workers wait on.

use crate::base::error::{Error, Result};
use crate::base::ids::{JobId, TenantId};
use crate::base::secrets::random_bytes;
use crate::base::sync::Arc;
#[cfg(feature = "native")]
use crate::contract::events::RecvError;
use crate::contract::events::{Cause, Collection, RecordId};
use crate::contract::names::queue_wake_channel as wake_channel;
use crate::contract::queue::DeadLetter;
use crate::contract::queue::{
    ClaimToken, ClaimedJob, Failed, JobInfo, JobOptions, QueueConfig, QueueInfo,
};
use crate::coord::queue::Waiting;
use crate::mem::named::TenantName;
use crate::mem::wake::Listener;
use crate::store::kinds::idempotency::{payload_digest, IdemParams, Outcome};
use crate::store::Store;
use std::time::{Duration, UNIX_EPOCH};

impl Store {
    /// Creates the job queue `name` with `config`'s settings. Creating it
    /// again with the same settings is a no-op; with other settings,
    /// [`Error::Exists`]. Names as for [`notify`](Self::notify).
    ///
    /// A queue reserves its whole capacity at creation: refused with
    /// `CapacityExceeded` past `queues_per_tenant_max` (scope
    /// `Tenant(Queues)`), `queues_max` (`Collection(Queues)`), or when its
    /// `jobs_max` / `bytes_max` do not fit the store-wide budgets
    /// (`QueueJobsTotal`, `QueueBytesTotal`); `InvalidArgument` for a
    /// setting out of range; `Draining` / `ServiceUnavailable` while the
    /// store drains or once it stopped.
    pub fn create_queue(&self, tenant: TenantId, name: &str, config: QueueConfig) -> Result<()> {
        let created = self.create_queue_steps(tenant, name, config);
        self.observed(tenant, created)
    }

    fn create_queue_steps(&self, tenant: TenantId, name: &str, config: QueueConfig) -> Result<()> {
        self.check_own_name(name)?;
        self.shared
            .ttl
            .deadline(self.shared.clock.now(), config.visibility)?;
        self.admit_new(self.shared.clock.now())?;
        self.create_queue_named(tenant, Arc::from(name), config)
    }

    /// Creates a queue under any name (the store's own, reserved ones too).
    pub(in crate::store) fn create_queue_named(
        &self,
        tenant: TenantId,
        name: Arc<str>,
        config: QueueConfig,
    ) -> Result<()> {
        let _in = self.enter();
        let seed = match config.jitter_seed {
            Some(seed) => seed,
            None => {
                let mut bytes = [0; 8];
                random_bytes(&mut bytes)?;
                u64::from_le_bytes(bytes)
            }
        };
        self.shared
            .queues
            .create(TenantName(tenant, name), config, seed)
    }

    /// Deletes the queue with every job in it, dead letters included
    /// (removal event `Queues`, cause `Released`). Outstanding claims
    /// become stale; waiting workers wake and find it gone.
    pub fn delete_queue(&self, tenant: TenantId, name: &str) -> Result<()> {
        let _in = self.enter();
        self.check_own_name(name)?;
        let queue = self.shared.queues.delete((tenant, name))?;
        let name: Arc<str> = Arc::from(name);
        self.emit(
            Collection::Queues,
            tenant,
            RecordId::Queue(Arc::clone(&name)),
            Cause::Released,
        );
        self.shared
            .wakes
            .notify(&(tenant, Arc::clone(&queue.wake)))?;
        Ok(())
    }

    /// Enqueues a job; returns its id. Ready at once, or after
    /// `options.delay`; claimed at most `options.attempts_max` times (the
    /// queue's `attempts_max` if not given). Wakes waiting workers when the
    /// job is ready.
    ///
    /// Refused with `NotFound` if the queue does not exist,
    /// `InvalidArgument` for a payload over `job_payload_bytes_max`, a
    /// delay over `ttl_max` or zero attempts, `CapacityExceeded` when the
    /// queue holds `jobs_max` jobs (`QueueJobs`), `bytes_max` payload bytes
    /// (`QueueBytes`) or `dead_letters_max` dead letters
    /// (`QueueDeadLetters`), and `Draining` / `ServiceUnavailable` while
    /// the store drains or once it stopped. A refusal changes nothing.
    pub fn enqueue(
        &self,
        tenant: TenantId,
        queue: &str,
        payload: &[u8],
        options: JobOptions,
    ) -> Result<JobId> {
        self.check_own_name(queue)?;
        let first = self.enqueue_keyed(tenant, queue, &[payload], &options)?;
        Ok(self.job_id(first))
    }

    /// Enqueues `payloads` as jobs with the same options, all or none:
    /// one admission for the batch (every limit [`enqueue`](Self::enqueue)
    /// checks, for all of them at once), ids in the batch's order. A batch
    /// holds 1 to `page_len_max` jobs (else `InvalidArgument`).
    pub fn enqueue_batch(
        &self,
        tenant: TenantId,
        queue: &str,
        payloads: &[&[u8]],
        options: JobOptions,
    ) -> Result<Vec<JobId>> {
        self.check_own_name(queue)?;
        self.shared.config.check_enqueue_batch(payloads.len())?;
        let first = self.enqueue_keyed(tenant, queue, payloads, &options)?;
        Ok((first..first + payloads.len() as u64)
            .map(|seq| self.job_id(seq))
            .collect())
    }

    /// [`enqueue_many`](Self::enqueue_many) under the options'
    /// idempotency key, if they have one: a repeat answers the first
    /// job's number the key remembers.
    pub(in crate::store) fn enqueue_keyed(
        &self,
        tenant: TenantId,
        queue: &str,
        payloads: &[&[u8]],
        options: &JobOptions,
    ) -> Result<u64> {
        if options.idempotency_key.is_none() {
            // The hot path reads no clock of its own.
            return self.enqueue_many(tenant, queue, payloads, options);
        }
        let now = self.shared.clock.now();
        self.idempotent(
            tenant,
            options.idempotency_key.as_deref(),
            || IdemParams::Enqueue {
                queue: Arc::from(queue),
                jobs: payloads.len(),
                digest: payload_digest(payloads),
                delay: options.delay,
                run_at: options.run_at,
                attempts_max: options.attempts_max,
                priority: options.priority,
                unique: options.unique.clone(),
            },
            now,
            || self.enqueue_many(tenant, queue, payloads, options),
            |first| Outcome::Enqueue(*first),
            |o| match o {
                Outcome::Enqueue(first) => Some(*first),
                _ => None,
            },
        )
    }

    /// Enqueues jobs with the same options, all or none (one admission
    /// for all of them); returns the first one's sequence number (the
    /// others follow it). The store's schedules fire through it.
    pub(in crate::store) fn enqueue_many(
        &self,
        tenant: TenantId,
        queue: &str,
        payloads: &[&[u8]],
        options: &JobOptions,
    ) -> Result<u64> {
        let _in = self.enter();
        for payload in payloads {
            self.check_job(payload.len(), options)?;
        }
        self.shared.config.check_unique(options, payloads.len())?;
        // The queue is read as of now (a lapse may have filled its dead
        // letters), so even a job ready at once reads the clock.
        let now = self.shared.clock.now();
        self.admit_new(now)?;
        let delay = self.delay_of(options);
        let due = (!delay.is_zero()).then(|| now.saturating_add(delay).as_millis());
        let enqueued = self.shared.queues.enqueue(
            (tenant, queue),
            payloads,
            options,
            (now.as_millis(), due),
            &mut |n| self.next_seqs(n),
        );
        let (first, announce) = self.observed(tenant, enqueued)?;
        if let Some(wake) = announce {
            self.shared.wakes.notify(&(tenant, wake))?;
        }
        Ok(first)
    }

    /// Claims up to `max_jobs` ready jobs (at most `page_len_max`), by
    /// priority and oldest first within one, for `worker`; each is held for `visibility` (the queue's if
    /// `None`) and counts as an attempt. An empty result if none is ready.
    /// A job is never held by two live claims.
    pub fn claim(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
    ) -> Result<Vec<ClaimedJob>> {
        self.check_own_name(queue)?;
        self.claim_in(tenant, queue, worker, visibility, max_jobs)
    }

    /// [`claim`](Self::claim) from any queue (the store's own too).
    pub(in crate::store) fn claim_in(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
    ) -> Result<Vec<ClaimedJob>> {
        let _in = self.enter();
        self.check_name(worker)?;
        let max = self.shared.config.claim_batch(max_jobs)?;
        let now = self.shared.clock.now();
        if let Some(v) = visibility {
            self.shared.ttl.deadline(now, v)?;
        }
        self.refuse_if_stopped()?;
        self.shared
            .queues
            .claim((tenant, queue), worker, visibility, max, now.as_millis())
    }

    #[cfg(feature = "native")]
    /// [`claim_wait`](Self::claim_wait), blocking the calling thread up to
    /// `timeout` for a job to become ready (woken by enqueues, retries and
    /// lapsed claims; no polling). An empty result if none came. Never call
    /// it on an async runtime's worker thread.
    pub fn blocking_claim_wait(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
        timeout: Duration,
    ) -> Result<Vec<ClaimedJob>> {
        let deadline = std::time::Instant::now() + timeout;
        let wakes = self.queue_listener(tenant, queue)?;
        let mut waiting = None;
        loop {
            self.count_waiting(tenant, queue, &mut waiting)?;
            // Claim after taking any pending wake: an enqueue between the
            // claim and the wait leaves a wake, so the wait returns at once.
            let claimed = self.claim(tenant, queue, worker, visibility, max_jobs)?;
            if !claimed.is_empty() {
                return Ok(claimed);
            }
            let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) else {
                return Ok(claimed);
            };
            match wakes.blocking_recv_timeout(left) {
                Ok(_) => {}
                Err(RecvError::Timeout) => return Ok(claimed),
                Err(_) => return Err(Error::STOPPED),
            }
        }
    }

    /// [`claim`](Self::claim), waiting as a future for any executor until a
    /// job is ready (woken by enqueues, retries and lapsed claims; no
    /// polling), without a timeout (wrap it in the executor's). Cancel-safe:
    /// jobs are claimed only when returned.
    pub async fn claim_wait(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
    ) -> Result<Vec<ClaimedJob>> {
        let wakes = self.queue_listener(tenant, queue)?;
        let mut waiting = None;
        loop {
            self.count_waiting(tenant, queue, &mut waiting)?;
            let claimed = self.claim(tenant, queue, worker, visibility, max_jobs)?;
            if !claimed.is_empty() {
                return Ok(claimed);
            }
            wakes.recv().await.map_err(|_| Error::STOPPED)?;
        }
    }

    /// Keeps `waiting` counting this worker on the queue now under the
    /// name (a queue deleted and created again is a new queue, and its
    /// enqueues must see the worker), before the worker's next claim.
    fn count_waiting(
        &self,
        tenant: TenantId,
        queue: &str,
        waiting: &mut Option<Waiting>,
    ) -> Result<()> {
        let serial = self.shared.queues.serial((tenant, queue))?;
        if waiting.as_ref().is_none_or(|w| w.serial() != serial) {
            *waiting = Some(self.shared.queues.wait((tenant, queue))?);
        }
        Ok(())
    }

    fn queue_listener(&self, tenant: TenantId, queue: &str) -> Result<Listener> {
        self.check_own_name(queue)?;
        let listening = self
            .shared
            .wakes
            .listen_coalescing(tenant, wake_channel(queue));
        self.observed(tenant, listening)
    }

    /// Acknowledges a claimed job: it is done and leaves the queue. A
    /// stale, foreign or lapsed claim is refused with
    /// [`Error::StaleClaim`] and changes nothing.
    pub fn ack(&self, tenant: TenantId, queue: &str, job: JobId, claim: ClaimToken) -> Result<()> {
        self.check_own_name(queue)?;
        self.ack_in(tenant, queue, job, claim)
    }

    /// [`ack`](Self::ack) in any queue (the store's own too).
    pub(in crate::store) fn ack_in(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
    ) -> Result<()> {
        let _in = self.enter();
        let seq = self.job_seq(job)?;
        let now = self.shared.clock.now().as_millis();
        self.shared.queues.ack((tenant, queue), seq, claim, now)
    }

    /// Cancels a job: it leaves the queue whatever its state (ready,
    /// delayed, claimed or dead), and a claim on it then answers
    /// `NotFound`, as for a job acknowledged. `NotFound` if the queue does
    /// not hold it.
    pub fn cancel_job(&self, tenant: TenantId, queue: &str, job: JobId) -> Result<()> {
        self.check_own_name(queue)?;
        let _in = self.enter();
        let seq = self.job_seq(job)?;
        let now = self.shared.clock.now().as_millis();
        self.shared.queues.cancel((tenant, queue), seq, now)
    }

    /// Acknowledges several claimed jobs of one queue, under one hold of
    /// it: each is [`ack`](Self::ack)ed on its own, in order, and its
    /// outcome is the answer's entry at its position (a stale claim
    /// refuses only its own job). 1 to `page_len_max` acks
    /// (`InvalidArgument` otherwise); `NotFound` for a missing queue.
    pub fn ack_batch(
        &self,
        tenant: TenantId,
        queue: &str,
        acks: &[(JobId, ClaimToken)],
    ) -> Result<Vec<Result<()>>> {
        self.check_own_name(queue)?;
        self.shared.config.check_ack_batch(acks.len())?;
        let _in = self.enter();
        let acks: Vec<_> = acks
            .iter()
            .map(|&(job, claim)| (self.job_seq(job), claim))
            .collect();
        let now = self.shared.clock.now().as_millis();
        self.shared.queues.ack_many((tenant, queue), &acks, now)
    }

    /// Extends a live claim, for a job that takes longer than its
    /// visibility: the claim (the same token) now lapses `visibility` from
    /// now (the queue's if `None`; within the TTL range), and the attempt
    /// it counts as is not used again. Returns the visibility granted. The
    /// claim rule and refusal are [`ack`](Self::ack)'s: a lapsed,
    /// superseded or foreign claim is [`Error::StaleClaim`] and changes
    /// nothing.
    pub fn extend_claim(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        visibility: Option<Duration>,
    ) -> Result<Duration> {
        self.check_own_name(queue)?;
        let _in = self.enter();
        let seq = self.job_seq(job)?;
        let now = self.shared.clock.now();
        if let Some(v) = visibility {
            self.shared.ttl.deadline(now, v)?;
        }
        self.shared
            .queues
            .extend_claim((tenant, queue), seq, claim, visibility, now.as_millis())
    }

    /// Puts a claimed job back without using an attempt, for a worker that
    /// cannot take it on now: the job is ready again after `delay` (zero:
    /// at once; otherwise within the TTL range, else `InvalidArgument`),
    /// and the attempt its claim counted is given back. The claim rule and refusal are
    /// [`ack`](Self::ack)'s.
    pub fn snooze(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        delay: Duration,
    ) -> Result<()> {
        self.check_own_name(queue)?;
        let _in = self.enter();
        let seq = self.job_seq(job)?;
        let now = self.shared.clock.now();
        if !delay.is_zero() {
            self.shared.ttl.deadline(now, delay)?;
        }
        let delay_ms = crate::base::time::duration_to_millis_ceil(delay);
        match self
            .shared
            .queues
            .snooze((tenant, queue), seq, claim, delay_ms, now.as_millis())?
        {
            Some(wake) => self.shared.wakes.notify(&(tenant, wake)),
            None => Ok(()),
        }
    }

    /// Reports a claimed job failed: it is retried after the queue's
    /// backoff ([`Failed::RetryIn`]), or becomes a dead letter with
    /// `reason` if that was its last attempt. The claim rule and refusal
    /// are [`ack`](Self::ack)'s; a `reason` is a name (at most
    /// `name_bytes_max` bytes).
    pub fn fail(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        reason: &str,
    ) -> Result<Failed> {
        self.check_own_name(queue)?;
        self.fail_in(tenant, queue, job, claim, reason)
    }

    /// [`fail`](Self::fail) in any queue (the store's own too).
    pub(in crate::store) fn fail_in(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        reason: &str,
    ) -> Result<Failed> {
        let _in = self.enter();
        self.check_name(reason)?;
        let seq = self.job_seq(job)?;
        let now = self.shared.clock.now().as_millis();
        self.shared
            .queues
            .fail((tenant, queue), seq, claim, reason, now)
    }

    /// Job `job` as it is now (acked jobs are gone: `NotFound`). Also for
    /// the outbox's messages ([`OUTBOX_QUEUE`](crate::OUTBOX_QUEUE)), as are
    /// [`queue_info`](Self::queue_info) and the dead-letter operations.
    pub fn job(&self, tenant: TenantId, queue: &str, job: JobId) -> Result<JobInfo> {
        // Inside the commit gate: it settles what fell due, a change.
        let _in = self.enter();
        self.check_queue_to_inspect(queue)?;
        let seq = self.job_seq(job)?;
        let now = self.shared.clock.now().as_millis();
        self.shared.queues.job((tenant, queue), seq, now)
    }

    /// What the queue holds now, by state.
    pub fn queue_info(&self, tenant: TenantId, queue: &str) -> Result<QueueInfo> {
        let _in = self.enter();
        self.check_queue_to_inspect(queue)?;
        let now = self.shared.clock.now().as_millis();
        self.shared.queues.info((tenant, queue), now)
    }

    /// Up to `max` dead letters (at most `page_len_max`), oldest first,
    /// from `after` on (exclusive; `None` from the oldest).
    pub fn dead_letters(
        &self,
        tenant: TenantId,
        queue: &str,
        after: Option<JobId>,
        max: usize,
    ) -> Result<Vec<DeadLetter>> {
        self.check_queue_to_inspect(queue)?;
        let from = match after {
            Some(id) => self.job_seq(id)?.saturating_add(1),
            None => 0,
        };
        let max = self.shared.config.page_cap(max);
        // Inside the commit gate: it settles what fell due, a change.
        let _in = self.enter();
        let now = self.shared.clock.now().as_millis();
        let corpses = self
            .shared
            .queues
            .dead_letters((tenant, queue), from, max, now)?;
        Ok(corpses
            .into_iter()
            .map(|c| DeadLetter {
                id: self.job_id(c.seq),
                attempts: c.attempts,
                reason: c.reason,
                payload: c.payload,
            })
            .collect())
    }

    /// Returns a dead letter to the queue, ready, with a fresh set of
    /// attempts; wakes waiting workers. `NotFound` if it is not a dead
    /// letter of this queue.
    pub fn requeue_dead(&self, tenant: TenantId, queue: &str, job: JobId) -> Result<()> {
        let _in = self.enter();
        self.check_queue_to_inspect(queue)?;
        let seq = self.job_seq(job)?;
        let now = self.shared.clock.now().as_millis();
        match self.shared.queues.requeue_dead((tenant, queue), seq, now)? {
            Some(wake) => self.shared.wakes.notify(&(tenant, wake)),
            None => Ok(()),
        }
    }

    /// Drops every dead letter of the queue; returns how many.
    pub fn purge_dead(&self, tenant: TenantId, queue: &str) -> Result<usize> {
        let _in = self.enter();
        self.check_queue_to_inspect(queue)?;
        let now = self.shared.clock.now().as_millis();
        self.shared.queues.purge_dead((tenant, queue), now)
    }

    /// Job queues held.
    pub fn queues(&self) -> u64 {
        self.shared.queues.len()
    }

    /// The input rules of a job (every enqueue's, plain, scheduled or
    /// staged): payload size, delay or `run_at`, attempts.
    pub(in crate::store) fn check_job(&self, payload: usize, options: &JobOptions) -> Result<()> {
        let wall = options
            .run_at
            .map_or(UNIX_EPOCH, |_| self.shared.clock.wall());
        self.shared
            .queues
            .limits()
            .check_job(payload, options, wall)
    }

    /// How long from now a job enqueued with `options` waits: its delay,
    /// or its `run_at`'s distance by the store's wall clock (read only
    /// for a `run_at`).
    pub(in crate::store) fn delay_of(&self, options: &JobOptions) -> Duration {
        match options.run_at {
            Some(_) => options.delay_from(self.shared.clock.wall()),
            None => options.delay,
        }
    }

    pub(in crate::store) fn check_queue_to_inspect(&self, queue: &str) -> Result<()> {
        self.shared.config.check_inspected_queue(queue)
    }

    pub(in crate::store) fn job_id(&self, seq: u64) -> JobId {
        JobId::new(self.shared.incarnation, seq)
    }

    pub(in crate::store) fn job_seq(&self, id: JobId) -> Result<u64> {
        id.seq_in(self.shared.incarnation).ok_or(Error::Restarted)
    }
}
