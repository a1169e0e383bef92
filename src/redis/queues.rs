//! Job queues and the outbox on Redis (SPEC §10, ADR 0034): claims with
//! visibility, one validity rule for every claim operation, equal-jitter
//! retries, dead letters, and workers woken by enqueues on any instance.
//!
//! A queue lives in its tenant's slot, beside its jobs (`lua/shared/75_queues.lua`
//! has the layout); every transition is one function. Time-driven moves
//! (a delay ends, a claim lapses) are settled by the next call on the
//! queue's jobs, whichever it is (`queue_now` in `lua/shared/75_queues.lua`), by the
//! server's clock, so no timer runs in Redis; a worker waiting in
//! `claim_wait` wakes for enqueues and requeues on any instance, and
//! otherwise sleeps exactly until the queue's next such move. The outbox
//! is a queue of the tenant's own under the reserved name
//! [`OUTBOX_QUEUE`], as in memory.

use super::reply::Reply;
use super::{quota_arg, scripts, Call, Issued, Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::{JobId, TenantId};
use crate::base::name::Name;
use crate::base::time::duration_to_millis_ceil;
use crate::contract::names::queue_wake_channel as wake_channel;
use crate::contract::names::OUTBOX_QUEUE;
use crate::contract::outbox::{outbox_config, OutboxMessage, OutboxRun};
use crate::contract::queue::DeadLetter;
use crate::contract::queue::{
    ClaimToken, ClaimedJob, Failed, JobInfo, JobOptions, JobState, QueueConfig, QueueInfo,
};
use std::time::Duration;

/// What one claim call found: the jobs, and how long until the queue
/// changes by itself (a delay ends or a claim lapses), if it will.
struct Claimed {
    jobs: Vec<ClaimedJob>,
    next: Option<Duration>,
}

impl RedisEngine {
    /// Creates the queue `name` with `config`; the same queue again is a
    /// no-op, the name with other settings [`Error::Exists`]
    /// ([`Store::create_queue`](crate::Store::create_queue) has every
    /// rule). Its capacity is reserved under the store-wide queue budget.
    /// `jitter_seed` is kept with the settings, but retries draw their
    /// jitter per call (ADR 0034).
    pub async fn create_queue(
        &self,
        tenant: TenantId,
        name: &str,
        config: QueueConfig,
    ) -> Result<()> {
        self.config().check_own_name(name)?;
        self.create_queue_named(tenant, name, &config).await
    }

    pub(super) async fn create_queue_named(
        &self,
        tenant: TenantId,
        name: &str,
        config: &QueueConfig,
    ) -> Result<()> {
        self.inner.queue_limits.check(config)?;
        let visibility = self.ttl_ms(config.visibility)?;
        let args = scripts::CreateQueueArgs {
            name: name.into(),
            jobs_max: config.jobs_max.into(),
            bytes_max: config.bytes_max.into(),
            dead_max: config.dead_letters_cap().into(),
            visibility: visibility.into(),
            attempts_max: config.attempts_max.to_string().into(),
            backoff_base: duration_to_millis_ceil(config.backoff.base).into(),
            backoff_max: duration_to_millis_ceil(config.backoff.max).into(),
            jitter_seed: config
                .jitter_seed
                .map_or_else(String::new, |s| s.to_string())
                .into(),
            quota: quota_arg(self.config().queues_per_tenant_max).into(),
        }
        .encode();
        self.answer(
            scripts::CREATE_QUEUE,
            tenant,
            Mode::Creating,
            Issued::Nothing,
            args,
        )
        .await
        .map(drop)
    }

    /// Deletes the queue with every job in it (removal event `Queues`,
    /// cause `Released`); its waiting workers on every instance wake and
    /// find it gone.
    pub async fn delete_queue(&self, tenant: TenantId, name: &str) -> Result<()> {
        self.config().check_own_name(name)?;
        self.queue_call(
            scripts::DELETE_QUEUE,
            tenant,
            Issued::Nothing,
            scripts::DeleteQueueArgs { name: name.into() }.encode(),
        )
        .await
        .map(drop)
    }

    /// Enqueues a job; returns its id (above every earlier job's of the
    /// tenant). Refused as in memory: a full queue (`QueueJobs`,
    /// `QueueBytes`), one at its dead-letter cap (`QueueDeadLetters`), bad
    /// options (`InvalidArgument`), `Draining` while this handle drains. A
    /// ready job wakes the queue's waiting workers on every instance.
    pub async fn enqueue(
        &self,
        tenant: TenantId,
        queue: &str,
        payload: &[u8],
        options: JobOptions,
    ) -> Result<JobId> {
        self.config().check_own_name(queue)?;
        self.enqueue_named(tenant, queue, payload, &options).await
    }

    async fn enqueue_named(
        &self,
        tenant: TenantId,
        queue: &str,
        payload: &[u8],
        options: &JobOptions,
    ) -> Result<JobId> {
        let first = self.enqueue_all(tenant, queue, &[payload], options).await?;
        Ok(JobId::new(self.incarnation(), first))
    }

    /// Enqueues `payloads` as jobs with the same options, all or none
    /// ([`Store::enqueue_batch`](crate::Store::enqueue_batch)): one call,
    /// one admission, ids in the batch's order. A batch holds 1 to
    /// `page_len_max` jobs.
    pub async fn enqueue_batch(
        &self,
        tenant: TenantId,
        queue: &str,
        payloads: &[&[u8]],
        options: JobOptions,
    ) -> Result<Vec<JobId>> {
        self.config().check_own_name(queue)?;
        self.config().check_enqueue_batch(payloads.len())?;
        let first = self.enqueue_all(tenant, queue, payloads, &options).await?;
        let incarnation = self.incarnation();
        Ok((first..first + payloads.len() as u64)
            .map(|seq| JobId::new(incarnation, seq))
            .collect())
    }

    /// One `enqueue` call for `payloads`: the first job's number (the
    /// others follow it).
    async fn enqueue_all(
        &self,
        tenant: TenantId,
        queue: &str,
        payloads: &[&[u8]],
        options: &JobOptions,
    ) -> Result<u64> {
        let call = self.enqueue_call(tenant, queue, payloads, options)?;
        let reply = self.answer_call(tenant, call).await?;
        self.enqueued(&reply)
    }

    /// The first job's number an `enqueue` call answered.
    pub(super) fn enqueued(&self, reply: &Reply) -> Result<u64> {
        if reply.len() > 2 && reply.uint(2)? == 1 {
            return Err(Error::DuplicateJob {
                existing: JobId::new(self.incarnation(), reply.uint(1)?),
            });
        }
        reply.uint(1)
    }

    /// The `enqueue` call for `payloads` on `queue` (whose name the caller
    /// checked).
    pub(super) fn enqueue_call(
        &self,
        tenant: TenantId,
        queue: &str,
        payloads: &[&[u8]],
        options: &JobOptions,
    ) -> Result<Call> {
        // `run_at` is judged by the server's clock; this host's bounds its
        // distance (`ttl_max`) only.
        let wall = std::time::SystemTime::now();
        for payload in payloads {
            self.inner
                .queue_limits
                .check_job(payload.len(), options, wall)?;
        }
        self.config().check_unique(options, payloads.len())?;
        let unique = options.unique.as_ref();
        let key = options.idempotency_key.as_deref();
        if let Some(k) = key {
            self.check_name(k)?;
        }
        let quota = self.quota(tenant);
        let args = scripts::EnqueueArgs {
            name: queue.into(),
            delay: duration_to_millis_ceil(options.delay).into(),
            attempts_max: options
                .attempts_max
                .map_or_else(String::new, |a| a.to_string())
                .into(),
            wake: wake_channel(queue).as_bytes().into(),
            ikey: key.unwrap_or("").into(),
            ikey_ttl: self.idempotency_ttl_ms().into(),
            ikey_quota: quota_arg(quota.idempotency_max).into(),
            run_at: options
                .run_at
                .map_or_else(String::new, |at| epoch_ms(at).to_string())
                .into(),
            priority: options.priority.to_string().into(),
            ukey: unique.map_or("", |u| &*u.key).into(),
            ukey_window: unique
                .map_or(0, |u| duration_to_millis_ceil(u.window))
                .into(),
            ukey_states: unique
                .map_or_else(String::new, |u| unique_states(u.states))
                .into(),
            payloads: payloads.iter().map(|&p| p.into()).collect(),
        }
        .encode();
        Ok(Call {
            function: scripts::ENQUEUE,
            mode: Mode::Creating,
            issued: Issued::Nothing,
            args,
        })
    }

    /// Claims up to `max_jobs` (at most `page_len_max`) ready jobs, by
    /// priority and oldest first within one, for `visibility` (the queue's when `None`); each is handed to
    /// one claim at a time, on whichever instance claims. Settles what is
    /// due first (delays that ended, claims that lapsed). Cancel-safe: a
    /// caller that drops the future mid-call (a timeout, `select!`) gets
    /// nothing, and the claims the server made meanwhile are given back,
    /// each job ready again with its attempt unused (the call runs in a
    /// task of its own, which gives them back once it has the answer).
    pub async fn claim(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
    ) -> Result<Vec<ClaimedJob>> {
        self.config().check_own_name(queue)?;
        Ok(self
            .claim_named(tenant, queue, worker, visibility, max_jobs)
            .await?
            .jobs)
    }

    async fn claim_named(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
    ) -> Result<Claimed> {
        self.check_name(worker)?;
        let max = self.config().claim_batch(max_jobs)?;
        let visibility = visibility.map(|v| self.ttl_ms(v)).transpose()?;
        let args = scripts::ClaimArgs {
            name: queue.into(),
            worker: worker.into(),
            visibility: visibility
                .map_or_else(String::new, |v| v.to_string())
                .into(),
            most: max.into(),
        }
        .encode();
        // The call runs in a task of its own, so a caller that drops this
        // future (a timeout, `select!`) mid-call cannot leave jobs claimed
        // for nobody: the task gets the answer anyway and, finding the
        // caller gone, gives each claim back (SPEC §8).
        let (answer, answered) = tokio::sync::oneshot::channel();
        let engine = self.clone();
        let queue_name = queue.to_owned();
        tokio::spawn(async move {
            let reply = engine
                .queue_call(scripts::CLAIM, tenant, Issued::Nothing, args)
                .await;
            if let Err(Ok(reply)) = answer.send(reply) {
                engine.return_claims(tenant, &queue_name, &reply).await;
            }
        });
        let reply = answered
            .await
            .map_err(|_| Error::backend("the claim's task ended without an answer", true))??;
        let r = scripts::ClaimReply::decode(&reply)?;
        let incarnation = self.incarnation();
        let jobs = r
            .each
            .into_iter()
            .map(|job| ClaimedJob {
                id: JobId::new(incarnation, job.seq),
                claim: ClaimToken::from_bits(job.token),
                attempt: u32::try_from(job.attempt).unwrap_or(u32::MAX),
                payload: job.payload,
                visibility: r.visibility,
            })
            .collect();
        let next = u64::try_from(r.next).ok().map(Duration::from_millis);
        Ok(Claimed { jobs, next })
    }

    /// Gives back the claims of a claim reply nobody received: each job
    /// ready again, its attempt unused. Best effort: a claim that cannot
    /// be given back lapses after its visibility, as any unacknowledged
    /// claim does.
    async fn return_claims(&self, tenant: TenantId, queue: &str, reply: &Reply) {
        let Ok(claimed) = scripts::ClaimReply::decode(reply) else {
            tracing::warn!("relaystore redis: an unreadable claim reply; its claims lapse");
            return;
        };
        for job in claimed.each {
            // A snooze of no delay: ready again in its place.
            let args = scripts::SnoozeArgs {
                name: queue.into(),
                seq: job.seq.into(),
                token: job.token.into(),
                delay: 0u64.into(),
                wake: wake_channel(queue).as_bytes().into(),
            }
            .encode();
            let _ = self
                .queue_call(scripts::SNOOZE, tenant, Issued::Nothing, args)
                .await;
        }
    }

    /// Claims ready jobs, waiting until there is one: woken by an enqueue
    /// or requeue on any instance, and otherwise asleep until the queue's
    /// next delay ends or claim lapses (never polling). Cancel-safe, as
    /// [`claim`](Self::claim) is: wrap it in the executor's timeout. Takes
    /// one of this handle's listeners
    /// while it waits.
    pub async fn claim_wait(
        &self,
        tenant: TenantId,
        queue: &str,
        worker: &str,
        visibility: Option<Duration>,
        max_jobs: usize,
    ) -> Result<Vec<ClaimedJob>> {
        self.admit(Mode::Existing)?;
        self.config().check_own_name(queue)?;
        self.start_listener().await?;
        let wakes = self
            .inner
            .wakes
            .listen_coalescing(tenant, wake_channel(queue))?;
        loop {
            // Claim after taking any pending wake: an enqueue between the
            // claim and the wait leaves one, so the wait returns at once.
            let claimed = self
                .claim_named(tenant, queue, worker, visibility, max_jobs)
                .await?;
            if !claimed.jobs.is_empty() {
                return Ok(claimed.jobs);
            }
            let woken = wakes.recv();
            match claimed.next {
                Some(next) => {
                    if let Ok(woken) = tokio::time::timeout(next, woken).await {
                        woken.map_err(|_| Error::STOPPED)?;
                    }
                }
                None => {
                    woken.await.map_err(|_| Error::STOPPED)?;
                }
            }
        }
    }

    /// Acknowledges a claimed job: removes it if `claim` is its live claim
    /// (`StaleClaim` for a superseded, lapsed or foreign one, which
    /// changes nothing).
    pub async fn ack(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
    ) -> Result<()> {
        self.config().check_own_name(queue)?;
        self.ack_named(tenant, queue, job, claim).await
    }

    /// Cancels a job ([`Store::cancel_job`](crate::Store::cancel_job)): it
    /// leaves the queue whatever its state.
    pub async fn cancel_job(&self, tenant: TenantId, queue: &str, job: JobId) -> Result<()> {
        self.config().check_own_name(queue)?;
        let args = scripts::CancelJobArgs {
            name: queue.into(),
            seq: job.seq().into(),
        }
        .encode();
        self.queue_call(scripts::CANCEL_JOB, tenant, issued(job), args)
            .await
            .map(drop)
    }

    /// Acknowledges several claimed jobs of one queue in one call
    /// ([`Store::ack_batch`](crate::Store::ack_batch)): each on its own,
    /// its outcome at its position.
    pub async fn ack_batch(
        &self,
        tenant: TenantId,
        queue: &str,
        acks: &[(JobId, ClaimToken)],
    ) -> Result<Vec<Result<()>>> {
        self.config().check_own_name(queue)?;
        self.config().check_ack_batch(acks.len())?;
        let incarnation = self.incarnation();
        // Pairs of a job's number and its claim's token.
        let mut pairs = Vec::with_capacity(2 * acks.len());
        for &(job, claim) in acks {
            // An id of another incarnation is answered here, as a pair
            // that matches nothing there.
            let seq = if job.incarnation() == incarnation {
                job.seq()
            } else {
                0
            };
            pairs.push(seq.into());
            pairs.push(claim.to_bits().into());
        }
        let args = scripts::AckBatchArgs {
            name: queue.into(),
            acks: pairs,
        }
        .encode();
        let reply = self
            .queue_call(scripts::ACK_BATCH, tenant, Issued::Nothing, args)
            .await?;
        let codes = scripts::AckBatchReply::decode(&reply)?.each;
        if codes.len() != acks.len() {
            return Err(Error::backend("an ack batch answered for other acks", true));
        }
        acks.iter()
            .zip(codes)
            .map(|(&(job, _), answer)| {
                if job.incarnation() != incarnation {
                    return Ok(Err(Error::Restarted));
                }
                Ok(match answer.code {
                    super::reply::OK => Ok(()),
                    super::reply::NOT_FOUND => Err(Error::NotFound),
                    _ => Err(Error::StaleClaim),
                })
            })
            .collect()
    }

    /// Extends a live claim ([`Store::extend_claim`](crate::Store::extend_claim)):
    /// it lapses `visibility` from now by the server's clock (the queue's
    /// if `None`), the same claim, its attempt unused. Returns the
    /// visibility granted.
    pub async fn extend_claim(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        visibility: Option<Duration>,
    ) -> Result<Duration> {
        self.config().check_own_name(queue)?;
        let visibility = visibility.map(|v| self.ttl_ms(v)).transpose()?;
        let args = scripts::ExtendClaimArgs {
            name: queue.into(),
            seq: job.seq().into(),
            token: claim.to_bits().into(),
            visibility: visibility
                .map_or_else(String::new, |v| v.to_string())
                .into(),
        }
        .encode();
        let reply = self
            .queue_call(scripts::EXTEND_CLAIM, tenant, issued(job), args)
            .await?;
        Ok(scripts::ExtendClaimReply::decode(&reply)?.visibility)
    }

    /// Puts a claimed job back without using an attempt
    /// ([`Store::snooze`](crate::Store::snooze)): ready after `delay` by
    /// the server's clock (at once for zero), waking the queue's workers.
    pub async fn snooze(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        delay: Duration,
    ) -> Result<()> {
        self.config().check_own_name(queue)?;
        let delay = if delay.is_zero() {
            0
        } else {
            self.ttl_ms(delay)?
        };
        let args = scripts::SnoozeArgs {
            name: queue.into(),
            seq: job.seq().into(),
            token: claim.to_bits().into(),
            delay: delay.into(),
            wake: wake_channel(queue).as_bytes().into(),
        }
        .encode();
        self.queue_call(scripts::SNOOZE, tenant, issued(job), args)
            .await
            .map(drop)
    }

    async fn ack_named(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
    ) -> Result<()> {
        let call = self.ack_call(queue, job, claim);
        self.answer_call(tenant, call).await.map(drop)
    }

    /// The `ack` call (on a queue whose name the caller checked).
    pub(super) fn ack_call(&self, queue: &str, job: JobId, claim: ClaimToken) -> Call {
        let args = scripts::AckArgs {
            name: queue.into(),
            seq: job.seq().into(),
            token: claim.to_bits().into(),
        }
        .encode();
        queue_of(scripts::ACK, issued(job), args)
    }

    /// Fails a claimed job with `reason`: it retries after the queue's
    /// equal-jitter backoff, or is dead-lettered after its last attempt.
    /// `StaleClaim` as for [`ack`](Self::ack).
    pub async fn fail(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        reason: &str,
    ) -> Result<Failed> {
        self.config().check_own_name(queue)?;
        self.fail_named(tenant, queue, job, claim, reason).await
    }

    async fn fail_named(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        reason: &str,
    ) -> Result<Failed> {
        let call = self.fail_call(queue, job, claim, reason)?;
        failed(&self.answer_call(tenant, call).await?)
    }

    /// The `fail` call (on a queue whose name the caller checked).
    pub(super) fn fail_call(
        &self,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        reason: &str,
    ) -> Result<Call> {
        self.check_name(reason)?;
        let mut draw = [0u8; 4];
        crate::base::secrets::random_bytes(&mut draw)?;
        let args = scripts::FailArgs {
            name: queue.into(),
            seq: job.seq().into(),
            token: claim.to_bits().into(),
            reason: reason.into(),
            draw: u64::from(u32::from_le_bytes(draw)).into(),
        }
        .encode();
        Ok(queue_of(scripts::FAIL, issued(job), args))
    }

    /// A job as it is now (what is due settled first).
    pub async fn job(&self, tenant: TenantId, queue: &str, job: JobId) -> Result<JobInfo> {
        self.config().check_inspected_queue(queue)?;
        let args = scripts::JobArgs {
            name: queue.into(),
            seq: job.seq().into(),
        }
        .encode();
        let reply = self
            .queue_call(scripts::JOB, tenant, issued(job), args)
            .await?;
        let r = scripts::JobReply::decode(&reply)?;
        let (left, text) = (r.left, r.text);
        let state = match &*r.state {
            "d" => JobState::Delayed { ready_in: left },
            "c" => JobState::Claimed {
                worker: text,
                lapses_in: left,
            },
            "x" => JobState::Dead { reason: text },
            _ => JobState::Ready,
        };
        Ok(JobInfo {
            state,
            attempts: u32::try_from(r.attempts).unwrap_or(u32::MAX),
            attempts_max: u32::try_from(r.attempts_max).unwrap_or(u32::MAX),
            payload: r.payload,
            priority: u8::try_from(r.priority).unwrap_or(u8::MAX),
        })
    }

    /// What a queue holds, by state (what is due settled first).
    pub async fn queue_info(&self, tenant: TenantId, queue: &str) -> Result<QueueInfo> {
        self.config().check_inspected_queue(queue)?;
        let reply = self
            .queue_call(
                scripts::QUEUE_INFO,
                tenant,
                Issued::Nothing,
                scripts::QueueInfoArgs { name: queue.into() }.encode(),
            )
            .await?;
        let r = scripts::QueueInfoReply::decode(&reply)?;
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok(QueueInfo {
            ready: count(r.ready),
            delayed: count(r.delayed),
            claimed: count(r.claimed),
            dead: count(r.dead),
            bytes: count(r.bytes),
        })
    }

    /// Up to `max` (at most `page_len_max`) dead letters after `after`,
    /// oldest first.
    pub async fn dead_letters(
        &self,
        tenant: TenantId,
        queue: &str,
        after: Option<JobId>,
        max: usize,
    ) -> Result<Vec<DeadLetter>> {
        self.config().check_inspected_queue(queue)?;
        let from = after.map_or(0, |id| id.seq().saturating_add(1));
        let max = self.config().page_cap(max);
        let issued = after.map_or(Issued::Nothing, issued);
        let args = scripts::DeadLettersArgs {
            name: queue.into(),
            from: from.into(),
            most: max.into(),
        }
        .encode();
        let reply = self
            .queue_call(scripts::DEAD_LETTERS, tenant, issued, args)
            .await?;
        let incarnation = self.incarnation();
        Ok(scripts::DeadLettersReply::decode(&reply)?
            .each
            .into_iter()
            .map(|d| DeadLetter {
                id: JobId::new(incarnation, d.seq),
                attempts: u32::try_from(d.attempts).unwrap_or(u32::MAX),
                reason: d.reason,
                payload: d.payload,
            })
            .collect())
    }

    /// Returns a dead letter to the queue, ready, with fresh attempts.
    pub async fn requeue_dead(&self, tenant: TenantId, queue: &str, job: JobId) -> Result<()> {
        self.config().check_inspected_queue(queue)?;
        let args = scripts::RequeueDeadArgs {
            name: queue.into(),
            seq: job.seq().into(),
            wake: wake_channel(queue).as_bytes().into(),
        }
        .encode();
        self.queue_call(scripts::REQUEUE_DEAD, tenant, issued(job), args)
            .await
            .map(drop)
    }

    /// Drops every dead letter of a queue; returns how many.
    pub async fn purge_dead(&self, tenant: TenantId, queue: &str) -> Result<usize> {
        self.config().check_inspected_queue(queue)?;
        let reply = self
            .queue_call(
                scripts::PURGE_DEAD,
                tenant,
                Issued::Nothing,
                scripts::PurgeDeadArgs { name: queue.into() }.encode(),
            )
            .await?;
        let purged = scripts::PurgeDeadReply::decode(&reply)?.purged;
        Ok(usize::try_from(purged).unwrap_or(usize::MAX))
    }

    /// Puts a message on the tenant's outbox (its queue is created on
    /// first use with [`outbox_config`], taking one of the tenant's
    /// queues), as [`Store::outbox_put`](crate::Store::outbox_put).
    pub async fn outbox_put(
        &self,
        tenant: TenantId,
        topic: &str,
        payload: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<JobId> {
        let framed = crate::contract::outbox::frame(&self.config(), topic, payload)?;
        let options = JobOptions {
            idempotency_key: idempotency_key.map(Name::new),
            ..JobOptions::default()
        };
        match self
            .enqueue_named(tenant, OUTBOX_QUEUE, &framed, &options)
            .await
        {
            Err(Error::NotFound) => {
                self.create_queue_named(tenant, OUTBOX_QUEUE, &outbox_config())
                    .await?;
                self.enqueue_named(tenant, OUTBOX_QUEUE, &framed, &options)
                    .await
            }
            other => other,
        }
    }

    /// Delivers up to `max` due outbox messages through `handler`, as
    /// `worker` ([`Store::outbox_run_once`](crate::Store::outbox_run_once)):
    /// `Ok` acknowledges, `Err` or a panic fails the message (retried after
    /// the outbox backoff, dead-lettered after its last attempt).
    pub async fn outbox_run_once<F, E>(
        &self,
        tenant: TenantId,
        worker: &str,
        max: usize,
        mut handler: F,
    ) -> Result<OutboxRun>
    where
        F: FnMut(&OutboxMessage) -> std::result::Result<(), E> + Send,
        E: std::fmt::Display,
    {
        let claimed = match self
            .claim_named(tenant, OUTBOX_QUEUE, worker, None, max)
            .await
        {
            Err(Error::NotFound) => return Ok(OutboxRun::default()),
            other => other?.jobs,
        };
        let mut run = OutboxRun::default();
        let reason_max = self.config().name_bytes_max;
        for job in claimed {
            let outcome = crate::contract::outbox::deliver(&job, reason_max, &mut handler);
            match outcome {
                None => run.acked(
                    self.ack_named(tenant, OUTBOX_QUEUE, job.id, job.claim)
                        .await,
                ),
                Some(reason) => run.failed(
                    self.fail_named(tenant, OUTBOX_QUEUE, job.id, job.claim, &reason)
                        .await,
                ),
            }
        }
        Ok(run)
    }

    /// One call of a function on an existing queue (its name checked by
    /// the caller): the name first, then `args`.
    async fn queue_call(
        &self,
        function: scripts::Function,
        tenant: TenantId,
        issued: Issued,
        args: Vec<Vec<u8>>,
    ) -> Result<Reply> {
        self.answer_call(tenant, queue_of(function, issued, args))
            .await
    }
}

/// A call of `function` on a queue with `args` (the queue's name first).
fn queue_of(function: scripts::Function, issued: Issued, args: Vec<Vec<u8>>) -> Call {
    Call {
        function,
        mode: Mode::Existing,
        issued,
        args,
    }
}

/// How a failure went, as a `fail` call answered it.
pub(super) fn failed(reply: &Reply) -> Result<Failed> {
    Ok(match u64::try_from(reply.int(1)?) {
        Ok(ms) => Failed::RetryIn(Duration::from_millis(ms)),
        Err(_) => Failed::DeadLettered,
    })
}

/// What a job id carries that an incarnation issued.
fn issued(job: JobId) -> Issued {
    Issued::Id(job.incarnation(), job.seq())
}

/// `at` in milliseconds since the Unix epoch, as the server's clock counts
/// (before it: 0, which every clock has passed).
fn epoch_ms(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A unique job's states as the library reads them (`unique_takes` in
/// `lua/shared/75_queues.lua`): 'w' waiting, 'c' claimed, 'd' dead.
fn unique_states(states: crate::contract::queue::UniqueStates) -> String {
    [
        (states.waiting, 'w'),
        (states.claimed, 'c'),
        (states.dead, 'd'),
    ]
    .into_iter()
    .filter_map(|(on, letter)| on.then_some(letter))
    .collect()
}
