//! Transactions: changes staged in a private overlay and committed all at
//! once (SPEC §10, ADR 0028).
//!
//! # How a commit is atomic
//!
//! A commit closes the store's commit gate (`crate::mem::gate`): no mutation of
//! listings, streams, queues or schedules runs while it applies, and every
//! read of them that overlaps it is read again after it. It then runs in
//! two phases, at one reading of the clock:
//!
//! 1. **Check.** Everything that could refuse: the listings it updates or
//!    removes are visible (at the expected version), the streams it
//!    appends to have room and took no entry above its offsets, its claims
//!    are live, its enqueues fit, its consumers and schedules fit their
//!    caps. What the apply phase takes one after another (a queue's
//!    enqueues, acks and failures; a stream's consumer commits; every
//!    tenant's schedule changes, which share the store's ceiling) is
//!    checked one after another too, so an ack staged before an enqueue
//!    frees its room, and a failure that dead-letters a job counts
//!    against the enqueues after it.
//!    The listings it publishes are created as far as the creation
//!    protocol's last step (inserted, confirmed, not yet visible), holding
//!    their units; everything after runs in the creation's last hook, so a
//!    refusal anywhere takes every one of them back.
//! 2. **Apply.** Nothing can refuse any more: with the gate closed, no
//!    other writer changes what was checked, and the clock reading is
//!    fixed. The stream appends go in, then the other changes in staging
//!    order, and the publishes become visible.
//!
//! The wakes of what was committed (stream appends, ready jobs, notifies)
//! fire after the gate opens, so a woken listener reads the whole commit.
//!
//! A refused commit changes nothing visible. One thing it may leave: a
//! publish that found an invisible listing under its key (the listing's
//! lease expired, nothing swept it yet) reclaimed that listing to take the
//! key, as the sweeper would have, before the refusal; the listing's
//! expired join attempts then answer `NotFound` (swept) rather than
//! `Expired`.

use crate::base::attrs::Attrs;
use crate::base::error::{Error, Result};
use crate::base::ids::{JobId, LeaseId, TenantId};
use crate::base::name::Name;
use crate::base::sync::Arc;
use crate::base::time::MonoTime;
use crate::contract::events::{Cause, Collection, RecordId};
use crate::contract::names::OUTBOX_QUEUE;
use crate::contract::outbox::outbox_config;
use crate::contract::queue::{ClaimToken, Failed, JobInfo, JobOptions, JobState, QueueInfo};
use crate::contract::relay::ListingInfo;
use crate::contract::stream::{StreamEntry, StreamRead};
use crate::coord::queue::Staged;
use crate::store::Store;

pub use crate::contract::tx::TX_OPS_MAX;
use crate::contract::tx::{check_stage, TxTarget as Target};

/// A transaction: changes staged against a store, applied all at once by
/// [`commit`](Self::commit). From [`Store::begin_tx`].
///
/// Each staging call validates its input (names, sizes, grammar, ids) and
/// refuses at once, staging nothing; what depends on the state (room,
/// versions, live claims) is decided at the commit. Reads through the
/// transaction see its own staged writes over the committed state.
///
/// Dropping the transaction, or a panic while it is alive, rolls it back:
/// nothing it staged becomes visible, and no wake fires. Two things of it
/// remain: the stream offsets and job ids it took at staging are never
/// handed out again (a stream has a gap there; see
/// [`append`](Self::append)).
///
/// A listing is written at most once per transaction (published, updated
/// or unpublished), as is a schedule, and a claimed job is acked or failed
/// at most once; a second write is `InvalidArgument`.
#[must_use = "a transaction does nothing until it is committed"]
pub struct Transaction {
    store: Store,
    ops: Vec<Op>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("staged", &self.ops.len())
            .finish()
    }
}

/// What a commit did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Committed {
    /// The version of each listing the transaction published or updated,
    /// by tenant and key: the publishes, then the updates, each in staging
    /// order.
    pub listings: Vec<(TenantId, Arc<str>, u64)>,
    /// How each job the transaction failed went, by job.
    pub failed: Vec<(JobId, Failed)>,
}

impl Committed {
    /// The version the commit gave the listing under `key`, if it
    /// published or updated it.
    pub fn listing_version(&self, tenant: TenantId, key: &str) -> Option<u64> {
        self.listings
            .iter()
            .find(|(t, k, _)| *t == tenant && &**k == key)
            .map(|(_, _, v)| *v)
    }
}

/// One staged change.
enum Op {
    Publish {
        tenant: TenantId,
        lease: u64,
        key: Arc<str>,
        attrs: Attrs,
    },
    Update {
        tenant: TenantId,
        key: Arc<str>,
        expected: u64,
        attrs: Attrs,
    },
    Unpublish {
        tenant: TenantId,
        key: Arc<str>,
        expected: Option<u64>,
    },
    Notify {
        tenant: TenantId,
        channel: Arc<str>,
        payload: Box<[u8]>,
    },
    Append {
        tenant: TenantId,
        stream: Arc<str>,
        /// The serial of the stream the offset was taken from.
        serial: u64,
        offset: u64,
        payload: Arc<[u8]>,
    },
    CommitOffset {
        tenant: TenantId,
        stream: Arc<str>,
        consumer: Arc<str>,
        offset: u64,
    },
    Trim {
        tenant: TenantId,
        stream: Arc<str>,
        before: u64,
    },
    Enqueue {
        tenant: TenantId,
        queue: Arc<str>,
        seq: u64,
        payload: Arc<[u8]>,
        options: JobOptions,
    },
    Ack {
        tenant: TenantId,
        queue: Arc<str>,
        seq: u64,
        claim: ClaimToken,
    },
    Fail {
        tenant: TenantId,
        queue: Arc<str>,
        seq: u64,
        claim: ClaimToken,
        reason: Arc<str>,
    },
    Schedule {
        tenant: TenantId,
        name: Arc<str>,
        spec: Arc<str>,
        queue: Arc<str>,
        payload: Arc<[u8]>,
    },
    Unschedule {
        tenant: TenantId,
        name: Arc<str>,
    },
}

impl Op {
    fn target(&self) -> Option<Target<'_>> {
        match self {
            Op::Publish { tenant, key, .. }
            | Op::Update { tenant, key, .. }
            | Op::Unpublish { tenant, key, .. } => Some(Target::Listing(*tenant, key)),
            Op::Ack {
                tenant, queue, seq, ..
            }
            | Op::Fail {
                tenant, queue, seq, ..
            } => Some(Target::Job(*tenant, queue, *seq)),
            Op::Schedule { tenant, name, .. } | Op::Unschedule { tenant, name } => {
                Some(Target::Schedule(*tenant, name))
            }
            _ => None,
        }
    }
}

/// What one object of a commit is, for grouping its staged changes.
type Object = (TenantId, Arc<str>);

/// A stream's staged entries: offset and payload, offsets rising.
type Entries = Vec<(u64, Arc<[u8]>)>;

/// A stream as a transaction staged appends to it: tenant, name, serial.
type StreamOf = (TenantId, Arc<str>, u64);

/// A stream's staged consumer commits in staging order: consumer and
/// offset (a consumer may come more than once).
type Offsets = Vec<(Arc<str>, u64)>;

impl Store {
    /// Begins a transaction: see [`Transaction`].
    pub fn begin_tx(&self) -> Transaction {
        Transaction {
            store: self.clone(),
            ops: Vec::with_capacity(4),
        }
    }

    /// Runs `stage` on a new transaction and commits what it staged if it
    /// returns `Ok`: its value and what the commit did. If `stage`
    /// returns `Err`, or panics, the transaction is dropped and nothing it
    /// staged happens; a refused commit (its error converted into `E`)
    /// changes nothing either.
    ///
    /// ```
    /// # use relaystore::stream::{StreamConfig, WhenFull};
    /// # use relaystore::{Error, Store, TenantId};
    /// let store = Store::builder().build()?;
    /// let game = TenantId(1);
    /// let config = StreamConfig::new(16, 1024, WhenFull::Refuse);
    /// store.create_stream(game, "log", config)?;
    /// let (offset, _) = store.with_tx(|tx| tx.append(game, "log", b"opened"))?;
    /// assert_eq!(offset, 0);
    /// let refused: Result<((), _), Error> = store.with_tx(|tx| {
    ///     tx.append(game, "log", b"never")?;
    ///     Err(Error::NotFound) // the caller gives up: nothing staged happens
    /// });
    /// assert!(refused.is_err());
    /// assert_eq!(store.stream_info(game, "log")?.entries, 1); // "never" is not in it
    /// # Ok::<(), Error>(())
    /// ```
    pub fn with_tx<T, E: From<Error>>(
        &self,
        stage: impl FnOnce(&mut Transaction) -> std::result::Result<T, E>,
    ) -> std::result::Result<(T, Committed), E> {
        let mut tx = self.begin_tx();
        let value = stage(&mut tx)?;
        let committed = tx.commit()?;
        Ok((value, committed))
    }
}

impl Transaction {
    /// Refuses a staging past [`TX_OPS_MAX`] (before it takes an offset
    /// or an id).
    fn room(&self) -> Result<()> {
        check_stage(self.ops.len(), std::iter::empty(), None)
    }

    fn stage(&mut self, op: Op) -> Result<()> {
        self.room()?;
        self.ops.push(op);
        Ok(())
    }

    /// The staged write of the listing under `key`, if any.
    fn listing_op(&self, tenant: TenantId, key: &str) -> Option<&Op> {
        let target = Target::Listing(tenant, key);
        self.ops.iter().find(|op| op.target() == Some(target))
    }

    /// Refuses a second write of `target` (a listing, a claimed job, a
    /// schedule) in this transaction.
    fn once(&self, target: Target<'_>) -> Result<()> {
        let staged = self.ops.iter().filter_map(Op::target);
        check_stage(0, staged, Some(target))
    }

    /// Stages [`Store::publish`]: visible at the commit, which answers
    /// `Conflict` if the key is taken then.
    pub fn publish(
        &mut self,
        tenant: TenantId,
        lease: LeaseId,
        key: &str,
        attrs: &[u8],
    ) -> Result<()> {
        let lease = self.store.lease_seq(lease)?;
        let key = self.store.name(key)?;
        let attrs = self.store.attrs(attrs)?;
        self.once(Target::Listing(tenant, &key))?;
        self.stage(Op::Publish {
            tenant,
            lease,
            key,
            attrs,
        })
    }

    /// Stages [`Store::update_listing`]: the commit answers `Conflict` if
    /// the listing is no longer at `expected_version` then. The new
    /// version is in [`Committed::listings`].
    pub fn update_listing(
        &mut self,
        tenant: TenantId,
        key: &str,
        expected_version: u64,
        attrs: &[u8],
    ) -> Result<()> {
        let key = self.store.name(key)?;
        let attrs = self.store.attrs(attrs)?;
        self.once(Target::Listing(tenant, &key))?;
        self.stage(Op::Update {
            tenant,
            key,
            expected: expected_version,
            attrs,
        })
    }

    /// Stages [`Store::unpublish`].
    pub fn unpublish(
        &mut self,
        tenant: TenantId,
        key: &str,
        expected_version: Option<u64>,
    ) -> Result<()> {
        let key = self.store.name(key)?;
        self.once(Target::Listing(tenant, &key))?;
        self.stage(Op::Unpublish {
            tenant,
            key,
            expected: expected_version,
        })
    }

    /// Stages [`Store::notify`]: its listeners wake after the commit.
    pub fn notify(&mut self, tenant: TenantId, channel: &str) -> Result<()> {
        self.notify_with(tenant, channel, &[])
    }

    /// Stages [`Store::notify_with`]: its listeners wake after the commit,
    /// with `payload` (checked now).
    pub fn notify_with(&mut self, tenant: TenantId, channel: &str, payload: &[u8]) -> Result<()> {
        self.store.shared.config.check_notify(channel, payload)?;
        let channel: Arc<str> = Arc::from(channel);
        if crate::base::faults::active(crate::base::faults::StoreFault::TxWakeAtStaging) {
            // Broken twin: the listeners wake before anything is committed.
            self.store.fire(&[(tenant, Arc::clone(&channel))]);
        }
        self.stage(Op::Notify {
            tenant,
            channel,
            payload: Box::from(payload),
        })
    }

    /// Stages [`Store::append`]; returns the entry's offset, taken now.
    /// The commit answers `Conflict` if another append went in above that
    /// offset meanwhile (offsets only grow). The offset of an append that
    /// is rolled back, or whose commit is refused, stays a gap in the
    /// stream: readers skip it, and no entry ever takes it.
    pub fn append(&mut self, tenant: TenantId, stream: &str, payload: &[u8]) -> Result<u64> {
        let name = self.store.stream_name(stream)?;
        self.room()?;
        let (offset, serial) = {
            let _in = self.store.enter();
            let alive = self.store.alive(tenant);
            self.store
                .shared
                .streams
                .reserve((tenant, stream), &alive, payload.len())?
        };
        self.stage(Op::Append {
            tenant,
            stream: name,
            serial,
            offset,
            payload: Arc::from(payload),
        })?;
        Ok(offset)
    }

    /// Stages [`Store::commit`] of `consumer`'s offset on `stream`.
    pub fn commit_offset(
        &mut self,
        tenant: TenantId,
        stream: &str,
        consumer: &str,
        offset: u64,
    ) -> Result<()> {
        let stream = self.store.stream_name(stream)?;
        let consumer = self.store.name(consumer)?;
        self.stage(Op::CommitOffset {
            tenant,
            stream,
            consumer,
            offset,
        })
    }

    /// Stages [`Store::trim_stream`].
    pub fn trim_stream(&mut self, tenant: TenantId, stream: &str, before: u64) -> Result<()> {
        let stream = self.store.stream_name(stream)?;
        self.stage(Op::Trim {
            tenant,
            stream,
            before,
        })
    }

    /// Stages [`Store::enqueue`]; returns the job's id, taken now (a
    /// rolled-back job's id is never handed out again).
    pub fn enqueue(
        &mut self,
        tenant: TenantId,
        queue: &str,
        payload: &[u8],
        options: JobOptions,
    ) -> Result<JobId> {
        self.store.check_own_name(queue)?;
        self.stage_enqueue(tenant, Arc::from(queue), Arc::from(payload), options)
    }

    /// Stages [`Store::outbox_put`]: the message is delivered only if the
    /// commit succeeds. The tenant's outbox queue, if it has none yet, is
    /// created by the commit.
    pub fn outbox_put(&mut self, tenant: TenantId, topic: &str, payload: &[u8]) -> Result<JobId> {
        let framed = self.store.outbox_frame(topic, payload)?;
        self.stage_enqueue(
            tenant,
            Arc::from(OUTBOX_QUEUE),
            Arc::from(framed),
            JobOptions::default(),
        )
    }

    fn stage_enqueue(
        &mut self,
        tenant: TenantId,
        queue: Arc<str>,
        payload: Arc<[u8]>,
        mut options: JobOptions,
    ) -> Result<JobId> {
        self.store.check_job(payload.len(), &options)?;
        if options.unique.is_some() {
            return Err(Error::InvalidArgument {
                reason: "a unique job cannot be staged in a transaction",
            });
        }
        // A `run_at` waits from staging: the commit applies it as a delay.
        options.delay = self.store.delay_of(&options);
        options.run_at = None;
        self.room()?;
        let seq = self.store.next_seq();
        self.stage(Op::Enqueue {
            tenant,
            queue,
            seq,
            payload,
            options,
        })?;
        Ok(self.store.job_id(seq))
    }

    /// Stages [`Store::ack`] (also for the outbox's queue,
    /// [`OUTBOX_QUEUE`]): the commit answers `StaleClaim` if the claim is
    /// not live then.
    pub fn ack(
        &mut self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
    ) -> Result<()> {
        self.store.check_queue_to_inspect(queue)?;
        let seq = self.store.job_seq(job)?;
        self.once(Target::Job(tenant, queue, seq))?;
        self.stage(Op::Ack {
            tenant,
            queue: Arc::from(queue),
            seq,
            claim,
        })
    }

    /// Stages [`Store::fail`]; how it went is in [`Committed::failed`].
    pub fn fail(
        &mut self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        reason: &str,
    ) -> Result<()> {
        self.store.check_queue_to_inspect(queue)?;
        let reason = self.store.name(reason)?;
        let seq = self.store.job_seq(job)?;
        self.once(Target::Job(tenant, queue, seq))?;
        self.stage(Op::Fail {
            tenant,
            queue: Arc::from(queue),
            seq,
            claim,
            reason,
        })
    }

    /// Stages [`Store::schedule`]; the spec is parsed and its interval
    /// checked now.
    pub fn schedule(
        &mut self,
        tenant: TenantId,
        name: &str,
        spec: &str,
        queue: &str,
        payload: &[u8],
    ) -> Result<()> {
        self.store.check_schedule(name, spec, queue, payload)?;
        self.once(Target::Schedule(tenant, name))?;
        self.stage(Op::Schedule {
            tenant,
            name: Arc::from(name),
            spec: Arc::from(spec),
            queue: Arc::from(queue),
            payload: Arc::from(payload),
        })
    }

    /// Stages [`Store::unschedule`].
    pub fn unschedule(&mut self, tenant: TenantId, name: &str) -> Result<()> {
        self.store.check_own_name(name)?;
        self.once(Target::Schedule(tenant, name))?;
        self.stage(Op::Unschedule {
            tenant,
            name: Arc::from(name),
        })
    }

    /// The listing under `key` as this transaction would leave it: its
    /// staged write over the committed listing. A listing it publishes
    /// reads with version 0 (the commit gives it its version) and its
    /// lease's time left; one it updates reads with its new attributes and
    /// the version it expects.
    pub fn get_listing(&self, tenant: TenantId, key: &str) -> Result<ListingInfo> {
        match self.listing_op(tenant, key) {
            Some(Op::Publish {
                lease, key, attrs, ..
            }) => Ok(ListingInfo {
                key: Name::new(key),
                lease: self.store.lease_id(*lease),
                attrs: attrs.clone(),
                version: 0,
                remaining: self
                    .store
                    .lease_remaining(tenant, *lease, self.store.shared.clock.now())
                    .unwrap_or_default(),
            }),
            Some(Op::Update {
                expected, attrs, ..
            }) => {
                let committed = self.store.get_listing(tenant, key)?;
                Ok(ListingInfo {
                    attrs: attrs.clone(),
                    version: *expected,
                    ..committed
                })
            }
            Some(_) => Err(Error::NotFound),
            None => self.store.get_listing(tenant, key),
        }
    }

    /// Up to `max` entries of `stream` from `from` on: the committed ones,
    /// then this transaction's staged appends.
    pub fn read_stream(
        &self,
        tenant: TenantId,
        stream: &str,
        from: u64,
        max: usize,
    ) -> Result<StreamRead> {
        let max = self.store.shared.config.page_cap(max);
        let committed = self.store.read_stream(tenant, stream, from, max)?;
        let mut entries = committed.entries;
        let staged = self.ops.iter().filter_map(|op| match op {
            Op::Append {
                tenant: t,
                stream: s,
                offset,
                payload,
                ..
            } if *t == tenant && &**s == stream && *offset >= from => Some(StreamEntry {
                offset: *offset,
                payload: Arc::clone(payload),
            }),
            _ => None,
        });
        entries.extend(staged);
        entries.sort_by_key(|e| e.offset);
        entries.truncate(max);
        let next = entries.last().map_or(committed.next, |e| e.offset + 1);
        Ok(StreamRead { entries, next })
    }

    /// The offset `consumer` has committed on `stream` as this
    /// transaction would leave it: its last staged
    /// [`commit_offset`](Self::commit_offset) (which the commit refuses
    /// if it is below the store's), else the store's
    /// ([`Store::committed`]). `NotFound` if the stream is gone.
    pub fn committed(&self, tenant: TenantId, stream: &str, consumer: &str) -> Result<Option<u64>> {
        let stored = self.store.committed(tenant, stream, consumer)?;
        let staged = self.ops.iter().rev().find_map(|op| match op {
            Op::CommitOffset {
                tenant: t,
                stream: s,
                consumer: c,
                offset,
            } if *t == tenant && &**s == stream && &**c == consumer => Some(*offset),
            _ => None,
        });
        Ok(staged.or(stored))
    }

    /// Up to `max` entries of `stream` from where `consumer` stands in
    /// this transaction ([`committed`](Self::committed); the first offset
    /// the stream holds if it never committed), merged with this
    /// transaction's staged appends as [`read_stream`](Self::read_stream)
    /// merges them.
    pub fn read_from_committed(
        &self,
        tenant: TenantId,
        stream: &str,
        consumer: &str,
        max: usize,
    ) -> Result<StreamRead> {
        let from = match self.committed(tenant, stream, consumer)? {
            Some(offset) => offset,
            None => self.store.stream_info(tenant, stream)?.first,
        };
        self.read_stream(tenant, stream, from, max)
    }

    /// Job `job` of `queue` as this transaction would leave it. A job it
    /// enqueues reads as ready (or delayed by its delay); one it acks is
    /// `NotFound`; one it fails reads as dead if that was its last
    /// attempt, else as delayed by the longest backoff the commit can draw
    /// (its jitter is drawn at the commit).
    pub fn job(&self, tenant: TenantId, queue: &str, job: JobId) -> Result<JobInfo> {
        let seq = self.store.job_seq(job)?;
        let key = (tenant, queue);
        for op in &self.ops {
            match op {
                Op::Enqueue {
                    tenant: t,
                    queue: q,
                    seq: s,
                    payload,
                    options,
                } if *t == tenant && &**q == queue && *s == seq => {
                    let config = self.store.shared.queues.config(key);
                    let attempts_max = match (options.attempts_max, config) {
                        (Some(n), _) => n,
                        (None, Ok(c)) => c.attempts_max,
                        (None, Err(_)) if queue == OUTBOX_QUEUE => outbox_config().attempts_max,
                        (None, Err(e)) => return Err(e),
                    };
                    let state = if options.delay.is_zero() {
                        JobState::Ready
                    } else {
                        JobState::Delayed {
                            ready_in: options.delay,
                        }
                    };
                    return Ok(JobInfo {
                        state,
                        attempts: 0,
                        attempts_max,
                        priority: options.priority,
                        payload: Arc::clone(payload),
                    });
                }
                Op::Ack {
                    tenant: t,
                    queue: q,
                    seq: s,
                    ..
                } if *t == tenant && &**q == queue && *s == seq => return Err(Error::NotFound),
                Op::Fail {
                    tenant: t,
                    queue: q,
                    seq: s,
                    reason,
                    ..
                } if *t == tenant && &**q == queue && *s == seq => {
                    let committed = self.store.job(tenant, queue, job)?;
                    let backoff = self.store.shared.queues.config(key)?.backoff;
                    let state = if committed.attempts >= committed.attempts_max {
                        JobState::Dead {
                            reason: Arc::clone(reason),
                        }
                    } else {
                        JobState::Delayed {
                            ready_in: backoff.capped(committed.attempts),
                        }
                    };
                    return Ok(JobInfo { state, ..committed });
                }
                _ => {}
            }
        }
        self.store.job(tenant, queue, job)
    }

    /// What `queue` would hold after this transaction, by state.
    pub fn queue_info(&self, tenant: TenantId, queue: &str) -> Result<QueueInfo> {
        let staged_here = |t: &TenantId, q: &str| *t == tenant && q == queue;
        let mut info = match self.store.queue_info(tenant, queue) {
            Err(Error::NotFound)
                if queue == OUTBOX_QUEUE
                    && self.ops.iter().any(|op| {
                        matches!(op, Op::Enqueue { tenant: t, queue: q, .. } if staged_here(t, q))
                    }) =>
            {
                QueueInfo::default()
            }
            other => other?,
        };
        for op in &self.ops {
            let (Op::Enqueue {
                tenant: t,
                queue: q,
                seq,
                ..
            }
            | Op::Ack {
                tenant: t,
                queue: q,
                seq,
                ..
            }
            | Op::Fail {
                tenant: t,
                queue: q,
                seq,
                ..
            }) = op
            else {
                continue;
            };
            if !staged_here(t, q) {
                continue;
            }
            let job = self.job(tenant, queue, self.store.job_id(*seq));
            match (op, job) {
                (Op::Enqueue { payload, .. }, Ok(job)) => {
                    info.bytes += payload.len();
                    match job.state {
                        JobState::Ready => info.ready += 1,
                        _ => info.delayed += 1,
                    }
                }
                (Op::Ack { .. }, _) => {
                    if let Ok(job) = self.store.job(tenant, queue, self.store.job_id(*seq)) {
                        info.claimed = info.claimed.saturating_sub(1);
                        info.bytes = info.bytes.saturating_sub(job.payload.len());
                    }
                }
                (Op::Fail { .. }, Ok(job)) => {
                    info.claimed = info.claimed.saturating_sub(1);
                    match job.state {
                        JobState::Dead { .. } => info.dead += 1,
                        _ => info.delayed += 1,
                    }
                }
                _ => {}
            }
        }
        Ok(info)
    }

    /// How many operations are staged.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies everything staged, atomically (see the module docs): all of
    /// it or, with the first refusal, none of it. It goes in if the staged
    /// changes, made one after another at one instant (the stream appends
    /// first, then the rest in staging order), would each be accepted, so
    /// an ack staged before an enqueue makes room for it and an unschedule
    /// staged before a schedule does too. Refusals are those of the plain
    /// operations (`Conflict` for a version or an offset another writer
    /// moved, `CapacityExceeded`, `StaleClaim`, `NotFound`, `Draining` /
    /// `ServiceUnavailable`, ...).
    /// The wakes of what was committed fire once all of it is visible.
    ///
    /// Refused with `InvalidArgument`, changing nothing, when called from
    /// inside one of the store's own calls (an outbox handler), whose
    /// changes the commit would have to wait for.
    pub fn commit(mut self) -> Result<Committed> {
        let ops = std::mem::take(&mut self.ops);
        let store = &self.store;
        if ops.is_empty() {
            return Ok(Committed::default());
        }
        let Some(closed) = store.shared.gate.close() else {
            return Err(Error::InvalidArgument {
                reason: "a transaction cannot commit inside a call of the same store",
            });
        };
        let now = store.shared.clock.now();
        let mut done = Applied::default();
        let mut published = Vec::new();
        let result = store.admit_new(now).and_then(|()| {
            let publishes: Vec<&Op> = ops
                .iter()
                .filter(|op| matches!(op, Op::Publish { .. }))
                .collect();
            let mut rest = || store.check_and_apply(&ops, now, &mut done);
            store.publish_all(&publishes, now, &mut rest, &mut published)
        });
        // The gate opens, then the wakes fire: a woken listener reads the
        // whole commit. A refused commit wakes nobody.
        drop(closed);
        result?;
        store.fire(&done.wakes);
        for (key, payload) in &done.notifies {
            // A store that stopped meanwhile has no listeners left to wake.
            let _ = store.shared.wakes.notify_with(key, payload);
        }
        // The publishes, then the updates, each in staging order.
        let mut listings = done.listings;
        if !published.is_empty() {
            published.append(&mut listings);
            listings = published;
        }
        Ok(Committed {
            listings,
            failed: done.failed,
        })
    }
}

/// A wake channel: its tenant and name.
type Channel = (TenantId, Arc<str>);

/// What the apply phase did.
#[derive(Default)]
struct Applied {
    /// The store's own channels to wake: appended streams, ready jobs.
    wakes: Vec<(TenantId, Arc<str>)>,
    /// The notifies staged, in staging order, with their payloads.
    notifies: Vec<(Channel, Box<[u8]>)>,
    listings: Vec<(TenantId, Arc<str>, u64)>,
    failed: Vec<(JobId, Failed)>,
}

/// The entry of `groups` under `key`, added empty if missing.
fn group<K: PartialEq, V: Default>(groups: &mut Vec<(K, V)>, key: K) -> &mut V {
    let i = match groups.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            groups.push((key, V::default()));
            groups.len() - 1
        }
    };
    &mut groups[i].1
}

/// An apply step, which the check phase has made sure cannot refuse: a
/// refusal here is a broken invariant of this module.
fn applied<T>(step: Result<T>) -> Result<T> {
    debug_assert!(
        step.is_ok(),
        "a checked commit step was refused: {:?}",
        step.as_ref().err()
    );
    step
}

impl Store {
    /// Publishes `publishes` one inside the other's last hook, and runs
    /// `rest` inside the innermost: every publish is visible only if
    /// `rest` succeeded, and every one is taken back if anything failed.
    fn publish_all(
        &self,
        publishes: &[&Op],
        now: MonoTime,
        rest: &mut dyn FnMut() -> Result<()>,
        out: &mut Vec<(TenantId, Arc<str>, u64)>,
    ) -> Result<()> {
        let Some((
            Op::Publish {
                tenant,
                lease,
                key,
                attrs,
            },
            inner,
        )) = publishes.split_first()
        else {
            return rest();
        };
        let mut inner_out = Vec::new();
        let info = self.publish_now(
            *tenant,
            *lease,
            Name::new(key),
            attrs.clone(),
            now,
            &mut || self.publish_all(inner, now, rest, &mut inner_out),
        )?;
        out.push((*tenant, info.key.into(), info.version));
        out.append(&mut inner_out);
        Ok(())
    }

    /// The two phases of a commit after its publishes were prepared.
    fn check_and_apply(&self, ops: &[Op], now: MonoTime, done: &mut Applied) -> Result<()> {
        let mut created = Vec::new();
        let checked = self.check_ops(ops, now, &mut created);
        if let Err(e) = checked {
            // Outbox queues the check created are taken back; nobody saw
            // them (the gate is closed).
            for tenant in created {
                let _ = self.shared.queues.delete((tenant, OUTBOX_QUEUE));
            }
            return Err(e);
        }
        self.apply_ops(ops, now, done)
    }

    fn check_ops(&self, ops: &[Op], now: MonoTime, created: &mut Vec<TenantId>) -> Result<()> {
        let now_ms = now.as_millis();
        // Grouped by object, in staging order (a transaction holds at most
        // TX_OPS_MAX changes: a scan beats a map here).
        let mut appends: Vec<(StreamOf, Entries)> = Vec::new();
        let mut consumers: Vec<(Object, Offsets)> = Vec::new();
        // Per queue, its changes in staging order: the apply phase takes
        // them so, and the check takes them as it will.
        let mut queues: Vec<(Object, Vec<Staged>)> = Vec::new();
        // In staging order, every tenant's together: they share the
        // store's ceiling.
        let mut schedules: Vec<(TenantId, &str, bool)> = Vec::new();
        for op in ops {
            match op {
                Op::Publish { .. } | Op::Notify { .. } => {}
                Op::Update {
                    tenant,
                    key,
                    expected,
                    ..
                } => self.check_listing_at(&(*tenant, Name::new(key)), Some(*expected), now)?,
                Op::Unpublish {
                    tenant,
                    key,
                    expected,
                } => self.check_listing_at(&(*tenant, Name::new(key)), *expected, now)?,
                Op::Append {
                    tenant,
                    stream,
                    serial,
                    offset,
                    payload,
                } => group(&mut appends, (*tenant, Arc::clone(stream), *serial))
                    .push((*offset, Arc::clone(payload))),
                Op::CommitOffset {
                    tenant,
                    stream,
                    consumer,
                    offset,
                } => group(&mut consumers, (*tenant, Arc::clone(stream)))
                    .push((Arc::clone(consumer), *offset)),
                Op::Trim {
                    tenant,
                    stream,
                    before,
                } => {
                    let alive = self.alive_at(*tenant, now);
                    self.shared
                        .streams
                        .trim((*tenant, stream), &alive, *before, now, false)?;
                }
                Op::Enqueue {
                    tenant,
                    queue,
                    payload,
                    ..
                } => group(&mut queues, (*tenant, Arc::clone(queue)))
                    .push(Staged::Enqueue(payload.len())),
                Op::Ack {
                    tenant,
                    queue,
                    seq,
                    claim,
                } => {
                    group(&mut queues, (*tenant, Arc::clone(queue))).push(Staged::Ack(*seq, *claim))
                }
                Op::Fail {
                    tenant,
                    queue,
                    seq,
                    claim,
                    ..
                } => group(&mut queues, (*tenant, Arc::clone(queue)))
                    .push(Staged::Fail(*seq, *claim)),
                Op::Schedule {
                    tenant,
                    name,
                    queue,
                    ..
                } => {
                    self.shared.queues.serial((*tenant, queue))?;
                    schedules.push((*tenant, name, true));
                }
                Op::Unschedule { tenant, name } => schedules.push((*tenant, name, false)),
            }
        }
        for ((tenant, stream, serial), staged) in &appends {
            let alive = self.alive_at(*tenant, now);
            self.shared.streams.append_staged(
                (*tenant, stream),
                &alive,
                *serial,
                staged,
                now,
                false,
            )?;
        }
        for ((tenant, stream), offsets) in &consumers {
            let alive = self.alive_at(*tenant, now);
            self.shared
                .streams
                .check_commits((*tenant, stream), &alive, offsets)?;
        }
        for ((tenant, queue), changes) in &queues {
            let key = (*tenant, &**queue);
            // A tenant's first outbox message makes its outbox queue.
            let enqueues = changes.iter().any(|c| matches!(c, Staged::Enqueue(_)));
            if &**queue == OUTBOX_QUEUE && enqueues && self.shared.queues.serial(key).is_err() {
                self.outbox_create(*tenant)?;
                created.push(*tenant);
            }
            self.shared.queues.check_staged(key, changes, now_ms)?;
        }
        self.shared.schedules.check(&schedules)?;
        Ok(())
    }

    fn apply_ops(&self, ops: &[Op], now: MonoTime, done: &mut Applied) -> Result<()> {
        let now_ms = now.as_millis();
        let mut appended: Vec<StreamOf> = Vec::new();
        // Appends first: a trim of the same stream staged before an append
        // then drops what lies below its offset, the new entry included,
        // and never leaves an entry below the stream's first offset.
        let (appends, others): (Vec<&Op>, Vec<&Op>) =
            ops.iter().partition(|op| matches!(op, Op::Append { .. }));
        for op in appends.into_iter().chain(others) {
            match op {
                Op::Publish { .. } => {}
                Op::Update {
                    tenant,
                    key,
                    expected,
                    attrs,
                } => {
                    let nkey = (*tenant, Name::new(key));
                    let version =
                        applied(self.update_listing_at(&nkey, *expected, attrs.clone(), now))?;
                    done.listings.push((*tenant, Arc::clone(key), version));
                }
                Op::Unpublish {
                    tenant,
                    key,
                    expected,
                } => {
                    let nkey = (*tenant, Name::new(key));
                    applied(self.end_listing_at(&nkey, *expected, Cause::Released, now))?;
                }
                Op::Notify {
                    tenant,
                    channel,
                    payload,
                } => {
                    let channel = Arc::clone(channel);
                    done.notifies.push(((*tenant, channel), payload.clone()));
                }
                Op::Append {
                    tenant,
                    stream,
                    serial,
                    ..
                } => {
                    // All of a stream's appends go in at its first one.
                    let object = (*tenant, Arc::clone(stream), *serial);
                    if appended.contains(&object) {
                        continue;
                    }
                    let staged: Entries = ops
                        .iter()
                        .filter_map(|o| match o {
                            Op::Append {
                                tenant: t,
                                stream: s,
                                serial: n,
                                offset,
                                payload,
                            } if *t == *tenant && s == stream && n == serial => {
                                Some((*offset, Arc::clone(payload)))
                            }
                            _ => None,
                        })
                        .collect();
                    let alive = self.alive_at(*tenant, now);
                    let wake = applied(self.shared.streams.append_staged(
                        (*tenant, stream),
                        &alive,
                        *serial,
                        &staged,
                        now,
                        true,
                    ))?;
                    done.wakes.push((*tenant, wake));
                    appended.push(object);
                }
                Op::CommitOffset {
                    tenant,
                    stream,
                    consumer,
                    offset,
                } => {
                    let alive = self.alive_at(*tenant, now);
                    applied(self.shared.streams.commit(
                        (*tenant, stream),
                        &alive,
                        Arc::clone(consumer),
                        *offset,
                    ))?;
                }
                Op::Trim {
                    tenant,
                    stream,
                    before,
                } => {
                    let alive = self.alive_at(*tenant, now);
                    applied(self.shared.streams.trim(
                        (*tenant, stream),
                        &alive,
                        *before,
                        now,
                        true,
                    ))?;
                }
                Op::Enqueue {
                    tenant,
                    queue,
                    seq,
                    payload,
                    options,
                } => {
                    let due = (!options.delay.is_zero())
                        .then(|| now.saturating_add(options.delay).as_millis());
                    let (_, announce) = applied(self.shared.queues.enqueue(
                        (*tenant, queue),
                        &[payload],
                        options,
                        (now_ms, due),
                        &mut |_| *seq,
                    ))?;
                    if let Some(wake) = announce {
                        done.wakes.push((*tenant, wake));
                    }
                }
                Op::Ack {
                    tenant,
                    queue,
                    seq,
                    claim,
                } => applied(
                    self.shared
                        .queues
                        .ack((*tenant, queue), *seq, *claim, now_ms),
                )?,
                Op::Fail {
                    tenant,
                    queue,
                    seq,
                    claim,
                    reason,
                } => {
                    let failed = applied(self.shared.queues.fail(
                        (*tenant, queue),
                        *seq,
                        *claim,
                        reason,
                        now_ms,
                    ))?;
                    done.failed.push((self.job_id(*seq), failed));
                }
                Op::Schedule {
                    tenant,
                    name,
                    spec,
                    queue,
                    payload,
                } => applied(self.shared.schedules.schedule(
                    *tenant,
                    Arc::clone(name),
                    spec,
                    Arc::clone(queue),
                    Arc::clone(payload),
                    now_ms,
                ))?,
                Op::Unschedule { tenant, name } => {
                    applied(self.shared.schedules.unschedule(*tenant, name))?;
                    let id = RecordId::Schedule(Arc::clone(name));
                    self.emit(Collection::Schedules, *tenant, id, Cause::Released);
                }
            }
        }
        Ok(())
    }

    /// Notifies each of `wakes` (a store that stopped meanwhile has no
    /// listeners left to wake).
    fn fire(&self, wakes: &[(TenantId, Arc<str>)]) {
        for wake in wakes {
            let _ = self.shared.wakes.notify(wake);
        }
    }
}
