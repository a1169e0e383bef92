//! Transactions through the engine contract: one tenant's changes, staged
//! in a [`TxBatch`] and committed all or none by
//! [`Engine::commit_tx`](crate::Engine::commit_tx) (SPEC §10, ADR 0069).
//!
//! A batch only collects changes; the engine checks each one as its plain
//! operation would (names, sizes, versions, room, live claims) when it
//! commits, in staging order, and a refusal anywhere leaves nothing of the
//! batch and wakes nobody. The in-memory store's own
//! [`Transaction`](crate::Transaction) adds reads that see staged writes
//! and changes of several tenants; a batch is what both engines serve.

use crate::base::error::{Error, Result};
use crate::base::ids::{JobId, LeaseId, TenantId};
use crate::base::name::Name;
use crate::contract::queue::{ClaimToken, Failed, JobOptions};
use std::sync::Arc;

/// Most operations one transaction stages. Staging one more is refused
/// with `InvalidArgument`; what a commit holds (payloads included) is
/// bounded by it and by the per-operation size limits.
pub const TX_OPS_MAX: usize = 64;

const SECOND_WRITE: &str =
    "a transaction writes a listing, a claimed job or a schedule at most once";

/// What a staged change writes that a transaction may write only once.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TxTarget<'a> {
    /// A listing, by tenant and key.
    Listing(TenantId, &'a str),
    /// A claimed job, by tenant, queue and number.
    Job(TenantId, &'a str, u64),
    /// A schedule, by tenant and name.
    Schedule(TenantId, &'a str),
}

/// The staging rules every transaction keeps, on either engine: at most
/// [`TX_OPS_MAX`] operations, and `target` written at most once among
/// `staged` (`InvalidArgument` otherwise).
pub(crate) fn check_stage<'a>(
    staged: usize,
    mut targets: impl Iterator<Item = TxTarget<'a>>,
    target: Option<TxTarget<'_>>,
) -> Result<()> {
    if staged >= TX_OPS_MAX {
        return Err(Error::InvalidArgument {
            reason: "a transaction stages at most TX_OPS_MAX operations",
        });
    }
    if let Some(target) = target {
        if targets.any(|t| t == target) {
            return Err(Error::InvalidArgument {
                reason: SECOND_WRITE,
            });
        }
    }
    Ok(())
}

/// One staged change of a [`TxBatch`], as the plain operation of the same
/// name takes it (without an idempotency key: a transaction commits once
/// or not at all).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxOp {
    /// [`publish`](crate::RelayEngine::publish).
    Publish {
        /// The lease the listing hangs from.
        lease: LeaseId,
        /// The listing's key.
        key: Name,
        /// Its attributes.
        attrs: Arc<[u8]>,
    },
    /// [`update_listing`](crate::RelayEngine::update_listing).
    UpdateListing {
        /// The listing's key.
        key: Name,
        /// The version it must be at.
        expected: u64,
        /// Its new attributes.
        attrs: Arc<[u8]>,
    },
    /// [`unpublish`](crate::RelayEngine::unpublish).
    Unpublish {
        /// The listing's key.
        key: Name,
        /// The version it must be at, if any.
        expected: Option<u64>,
    },
    /// [`notify_with`](crate::WakeEngine::notify_with) (an empty payload
    /// is [`notify`](crate::WakeEngine::notify)), sent once the commit is
    /// visible.
    Notify {
        /// The wake channel.
        channel: Arc<str>,
        /// What every listener receives.
        payload: Arc<[u8]>,
    },
    /// [`append`](crate::StreamEngine::append).
    Append {
        /// The stream.
        stream: Arc<str>,
        /// The entry.
        payload: Arc<[u8]>,
    },
    /// [`commit`](crate::StreamEngine::commit) of a consumer's offset.
    CommitOffset {
        /// The stream.
        stream: Arc<str>,
        /// The consumer.
        consumer: Arc<str>,
        /// Everything below it is processed.
        offset: u64,
    },
    /// [`trim_stream`](crate::StreamEngine::trim_stream).
    TrimStream {
        /// The stream.
        stream: Arc<str>,
        /// Entries below it go.
        before: u64,
    },
    /// [`enqueue`](crate::Engine::enqueue).
    Enqueue {
        /// The queue.
        queue: Arc<str>,
        /// The job's payload.
        payload: Arc<[u8]>,
        /// Its options (without an idempotency key or a unique key:
        /// [`TxBatch::enqueue`] refuses them).
        options: JobOptions,
    },
    /// [`outbox_put`](crate::Engine::outbox_put).
    OutboxPut {
        /// The message's topic.
        topic: Arc<str>,
        /// Its payload.
        payload: Arc<[u8]>,
    },
    /// [`ack`](crate::Engine::ack).
    Ack {
        /// The queue.
        queue: Arc<str>,
        /// The job.
        job: JobId,
        /// Its live claim.
        claim: ClaimToken,
    },
    /// [`fail`](crate::Engine::fail).
    Fail {
        /// The queue.
        queue: Arc<str>,
        /// The job.
        job: JobId,
        /// Its live claim.
        claim: ClaimToken,
        /// Why.
        reason: Arc<str>,
    },
    /// [`schedule`](crate::Engine::schedule).
    Schedule {
        /// The schedule's name.
        name: Arc<str>,
        /// `@every <interval>`.
        spec: Arc<str>,
        /// The queue it fires onto.
        queue: Arc<str>,
        /// Each fire's payload.
        payload: Arc<[u8]>,
    },
    /// [`unschedule`](crate::Engine::unschedule).
    Unschedule {
        /// The schedule's name.
        name: Arc<str>,
    },
}

impl TxOp {
    /// What it writes that a transaction writes only once.
    pub(crate) fn target(&self, tenant: TenantId) -> Option<TxTarget<'_>> {
        match self {
            TxOp::Publish { key, .. }
            | TxOp::UpdateListing { key, .. }
            | TxOp::Unpublish { key, .. } => Some(TxTarget::Listing(tenant, key)),
            TxOp::Ack { queue, job, .. } | TxOp::Fail { queue, job, .. } => {
                Some(TxTarget::Job(tenant, queue, job.seq()))
            }
            TxOp::Schedule { name, .. } | TxOp::Unschedule { name } => {
                Some(TxTarget::Schedule(tenant, name))
            }
            _ => None,
        }
    }
}

/// One tenant's changes, staged to be committed all or none by
/// [`Engine::commit_tx`](crate::Engine::commit_tx), on either engine.
///
/// Staging refuses at once, with `InvalidArgument` and nothing staged,
/// only what no state can change: a change past [`TX_OPS_MAX`], or a
/// second write of one listing, one claimed job or one schedule.
/// Everything else (names, sizes, versions, room, live claims) is checked
/// at the commit, as the plain operations check it, in staging order.
///
/// ```
/// # use relaystore::stream::{StreamConfig, WhenFull};
/// # use relaystore::{Engine, Error, Store, TenantId, TxBatch};
/// # use std::time::Duration;
/// async fn close_lobby<E: Engine>(engine: &E, game: TenantId, v: u64) -> Result<u64, Error> {
///     let mut tx = TxBatch::new(game);
///     tx.update_listing("lobby-1", v, b"state=closed")?;
///     tx.append("lobby-1.log", b"closed")?;
///     tx.outbox_put("lobby.closed", b"lobby-1")?;
///     tx.notify("lobby-changed")?;
///     let done = engine.commit_tx(tx).await?; // all of it, or an error and none of it
///     Ok(done.listing_version("lobby-1").expect("updated"))
/// }
/// # let store = Store::builder().build()?;
/// # let game = TenantId(1);
/// # let lease = store.grant(game, "host-a", Duration::from_secs(30), None)?;
/// # let v = store.publish(game, lease.id, "lobby-1", b"state=open", None)?.version;
/// # store.create_stream(game, "lobby-1.log", StreamConfig::new(10, 1 << 10, WhenFull::Refuse))?;
/// # let engine = store.engine();
/// # let mut task = std::pin::pin!(close_lobby(&engine, game, v));
/// # let done = task.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
/// # assert!(matches!(done, std::task::Poll::Ready(Ok(n)) if n > v));
/// # use std::future::Future;
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a transaction does nothing until it is committed"]
pub struct TxBatch {
    tenant: TenantId,
    ops: Vec<TxOp>,
}

impl TxBatch {
    /// An empty transaction of `tenant`'s changes.
    pub fn new(tenant: TenantId) -> Self {
        TxBatch {
            tenant,
            ops: Vec::new(),
        }
    }

    /// Whose changes it holds.
    pub fn tenant(&self) -> TenantId {
        self.tenant
    }

    /// What it staged, in order.
    pub fn ops(&self) -> &[TxOp] {
        &self.ops
    }

    /// How many changes it staged.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether it staged nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Stages `op` (see the type's rules).
    pub fn stage(&mut self, op: TxOp) -> Result<()> {
        let tenant = self.tenant;
        check_stage(
            self.ops.len(),
            self.ops.iter().filter_map(|o| o.target(tenant)),
            op.target(tenant),
        )?;
        self.ops.push(op);
        Ok(())
    }

    /// Stages [`publish`](crate::RelayEngine::publish).
    pub fn publish(&mut self, lease: LeaseId, key: &str, attrs: &[u8]) -> Result<()> {
        self.stage(TxOp::Publish {
            lease,
            key: Name::new(key),
            attrs: Arc::from(attrs),
        })
    }

    /// Stages [`update_listing`](crate::RelayEngine::update_listing).
    pub fn update_listing(&mut self, key: &str, expected: u64, attrs: &[u8]) -> Result<()> {
        self.stage(TxOp::UpdateListing {
            key: Name::new(key),
            expected,
            attrs: Arc::from(attrs),
        })
    }

    /// Stages [`unpublish`](crate::RelayEngine::unpublish).
    pub fn unpublish(&mut self, key: &str, expected: Option<u64>) -> Result<()> {
        self.stage(TxOp::Unpublish {
            key: Name::new(key),
            expected,
        })
    }

    /// Stages [`notify`](crate::WakeEngine::notify): the listeners wake
    /// once the commit is visible, and not at all if it is refused.
    pub fn notify(&mut self, channel: &str) -> Result<()> {
        self.notify_with(channel, &[])
    }

    /// Stages [`notify_with`](crate::WakeEngine::notify_with).
    pub fn notify_with(&mut self, channel: &str, payload: &[u8]) -> Result<()> {
        self.stage(TxOp::Notify {
            channel: Arc::from(channel),
            payload: Arc::from(payload),
        })
    }

    /// Stages [`append`](crate::StreamEngine::append); the offset is in
    /// the commit's [`TxOutcome`].
    pub fn append(&mut self, stream: &str, payload: &[u8]) -> Result<()> {
        self.stage(TxOp::Append {
            stream: Arc::from(stream),
            payload: Arc::from(payload),
        })
    }

    /// Stages [`commit`](crate::StreamEngine::commit) of `consumer`'s
    /// offset.
    pub fn commit_offset(&mut self, stream: &str, consumer: &str, offset: u64) -> Result<()> {
        self.stage(TxOp::CommitOffset {
            stream: Arc::from(stream),
            consumer: Arc::from(consumer),
            offset,
        })
    }

    /// Stages [`trim_stream`](crate::StreamEngine::trim_stream).
    pub fn trim_stream(&mut self, stream: &str, before: u64) -> Result<()> {
        self.stage(TxOp::TrimStream {
            stream: Arc::from(stream),
            before,
        })
    }

    /// Stages [`enqueue`](crate::Engine::enqueue); the job's id is in the
    /// commit's [`TxOutcome`].
    /// A job with an idempotency key or a unique key is refused with
    /// `InvalidArgument`: a transaction commits once or not at all, and a
    /// key taken by a commit that may still be refused would be taken by
    /// nothing.
    pub fn enqueue(&mut self, queue: &str, payload: &[u8], options: JobOptions) -> Result<()> {
        if options.idempotency_key.is_some() || options.unique.is_some() {
            return Err(Error::InvalidArgument {
                reason: "a job staged in a transaction takes no idempotency or unique key",
            });
        }
        self.stage(TxOp::Enqueue {
            queue: Arc::from(queue),
            payload: Arc::from(payload),
            options,
        })
    }

    /// Stages [`outbox_put`](crate::Engine::outbox_put); the message's id
    /// is in the commit's [`TxOutcome`].
    pub fn outbox_put(&mut self, topic: &str, payload: &[u8]) -> Result<()> {
        self.stage(TxOp::OutboxPut {
            topic: Arc::from(topic),
            payload: Arc::from(payload),
        })
    }

    /// Stages [`ack`](crate::Engine::ack).
    pub fn ack(&mut self, queue: &str, job: JobId, claim: ClaimToken) -> Result<()> {
        self.stage(TxOp::Ack {
            queue: Arc::from(queue),
            job,
            claim,
        })
    }

    /// Stages [`fail`](crate::Engine::fail); how it went is in the
    /// commit's [`TxOutcome`].
    pub fn fail(&mut self, queue: &str, job: JobId, claim: ClaimToken, reason: &str) -> Result<()> {
        self.stage(TxOp::Fail {
            queue: Arc::from(queue),
            job,
            claim,
            reason: Arc::from(reason),
        })
    }

    /// Stages [`schedule`](crate::Engine::schedule).
    pub fn schedule(&mut self, name: &str, spec: &str, queue: &str, payload: &[u8]) -> Result<()> {
        self.stage(TxOp::Schedule {
            name: Arc::from(name),
            spec: Arc::from(spec),
            queue: Arc::from(queue),
            payload: Arc::from(payload),
        })
    }

    /// Stages [`unschedule`](crate::Engine::unschedule).
    pub fn unschedule(&mut self, name: &str) -> Result<()> {
        self.stage(TxOp::Unschedule {
            name: Arc::from(name),
        })
    }
}

/// What one committed change gave, at its staging position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxApplied {
    /// A listing published or updated, at this version.
    Listing {
        /// Its new version.
        version: u64,
    },
    /// A stream entry, at this offset.
    Appended {
        /// Its offset.
        offset: u64,
    },
    /// A job or outbox message, with this id.
    Enqueued {
        /// Its id.
        job: JobId,
    },
    /// A failure, and how it went.
    Failed(Failed),
    /// A change with nothing to report.
    Done,
}

/// What a committed [`TxBatch`] did: one [`TxApplied`] per staged change,
/// in staging order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxOutcome {
    /// The batch (its keys, to look results up by).
    pub(crate) batch: TxBatch,
    /// Each change's result, at its staging position.
    pub applied: Vec<TxApplied>,
}

impl TxOutcome {
    /// The version the commit gave the listing under `key`, if it
    /// published or updated it.
    pub fn listing_version(&self, key: &str) -> Option<u64> {
        self.batch
            .ops
            .iter()
            .zip(&self.applied)
            .find_map(|(op, applied)| match (op, applied) {
                (
                    TxOp::Publish { key: k, .. } | TxOp::UpdateListing { key: k, .. },
                    TxApplied::Listing { version },
                ) if k.as_str() == key => Some(*version),
                _ => None,
            })
    }

    /// The offsets of the entries the commit appended to `stream`, in
    /// staging order.
    pub fn offsets(&self, stream: &str) -> Vec<u64> {
        self.batch
            .ops
            .iter()
            .zip(&self.applied)
            .filter_map(|(op, applied)| match (op, applied) {
                (TxOp::Append { stream: s, .. }, TxApplied::Appended { offset })
                    if &**s == stream =>
                {
                    Some(*offset)
                }
                _ => None,
            })
            .collect()
    }

    /// The ids of the jobs and outbox messages the commit enqueued, in
    /// staging order.
    pub fn jobs(&self) -> Vec<JobId> {
        self.applied
            .iter()
            .filter_map(|a| match a {
                TxApplied::Enqueued { job } => Some(*job),
                _ => None,
            })
            .collect()
    }
}
