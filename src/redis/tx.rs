//! Transactions on Redis (ADR 0069): a [`TxBatch`] of one tenant's changes
//! is one call of the `tx` function (`lua/tx.lua`) in the tenant's slot.
//! Each change is the call its plain operation makes, prepared by the same
//! code (`*_call` in the operation's module), run by the same function
//! body in staging order; every write is journaled, and the first refusal
//! takes every write back before the call returns. Wakes are published
//! only when the whole call succeeded.

use super::reply::{self, Reply};
use super::{scripts, Call, Issued, Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::{JobId, TenantId};
use crate::contract::names::OUTBOX_QUEUE;
use crate::contract::outbox::{frame, outbox_config};
use crate::contract::queue::JobOptions;
use crate::contract::tx::{TxApplied, TxBatch, TxOp, TxOutcome};
use std::sync::Arc;

/// A staged change as the `tx` function runs it: its function's name
/// and arguments, and how the engine reads its reply.
struct Step {
    op: &'static str,
    mode: Mode,
    issued: Issued,
    args: Vec<Vec<u8>>,
}

impl Step {
    fn of(call: Call) -> Self {
        Step {
            op: call.function.op(),
            mode: call.mode,
            issued: call.issued,
            args: call.args,
        }
    }
}

/// Why a commit was refused: the error, and which change (0-based).
struct Refused {
    at: usize,
    error: Error,
}

impl RedisEngine {
    /// Commits `batch` all or none (see
    /// [`Engine::commit_tx`](crate::Engine::commit_tx)): one function call
    /// in the tenant's slot, however many changes it holds. The outbox's
    /// queue is made on its first message, as
    /// [`outbox_put`](Self::outbox_put) makes it.
    pub async fn commit_tx(&self, batch: TxBatch) -> Result<TxOutcome> {
        let tenant = batch.tenant();
        if batch.is_empty() {
            return Ok(TxOutcome {
                batch,
                applied: Vec::new(),
            });
        }
        let outcome = match self.commit_steps(&batch).await {
            Err(Refused {
                at,
                error: Error::NotFound,
            }) if matches!(batch.ops().get(at), Some(TxOp::OutboxPut { .. })) => {
                self.create_queue_named(tenant, OUTBOX_QUEUE, &outbox_config())
                    .await?;
                self.commit_steps(&batch).await
            }
            other => other,
        };
        let applied = outcome.map_err(|r| r.error)?;
        Ok(TxOutcome { batch, applied })
    }

    /// One `tx` call for `batch`.
    async fn commit_steps(&self, batch: &TxBatch) -> std::result::Result<Vec<TxApplied>, Refused> {
        let tenant = batch.tenant();
        let at_none = |error| Refused { at: 0, error };
        let steps = batch
            .ops()
            .iter()
            .enumerate()
            .map(|(at, op)| self.step(tenant, op).map_err(|error| Refused { at, error }))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mode = if steps.iter().any(|s| s.mode == Mode::Creating) {
            Mode::Creating
        } else if steps.iter().any(|s| s.mode == Mode::Upserting) {
            Mode::Upserting
        } else {
            Mode::Existing
        };
        // What an earlier incarnation issued is answered `Restarted`; of
        // this one's, the oldest is held against the tenant's record.
        let incarnation = self.incarnation();
        let issued = steps
            .iter()
            .map(|s| s.issued)
            .filter(|i| matches!(i, Issued::Id(..)))
            .min_by_key(|i| match *i {
                Issued::Id(from, seq) => (from == incarnation, seq),
                _ => (true, u64::MAX),
            })
            .unwrap_or(Issued::Nothing);
        let mut args = args![steps.len().to_string()];
        for step in steps {
            args.push(step.op.as_bytes().to_vec());
            args.push(step.args.len().to_string().into_bytes());
            args.extend(step.args);
        }
        let reply = self
            .run(scripts::TX, tenant, mode, issued, args)
            .await
            .map_err(at_none)?
            .ok_or(at_none(Error::NotFound))?;
        if reply.code().map_err(at_none)? != reply::OK {
            let at = reply
                .len()
                .checked_sub(1)
                .and_then(|last| reply.uint(last).ok())
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|n| n.checked_sub(1))
                .unwrap_or(0);
            let error = match reply.refusal() {
                Err(e) => e,
                Ok(()) => Error::backend("a refused transaction answered OK", true),
            };
            if let Error::CapacityExceeded { scope, .. } = &error {
                crate::contract::metrics::refusal(super::REDIS, *scope);
            }
            return Err(Refused { at, error });
        }
        let mut applied = Vec::with_capacity(batch.len());
        for (at, op) in batch.ops().iter().enumerate() {
            let one = reply
                .nested(at + 1)
                .and_then(|r| self.applied(tenant, op, &r))
                .map_err(|error| Refused { at, error })?;
            applied.push(one);
        }
        Ok(applied)
    }

    /// What the commit did for `op` (its reply `r`), and what follows it
    /// on this handle (its wakes here).
    fn applied(&self, tenant: TenantId, op: &TxOp, r: &Reply) -> Result<TxApplied> {
        Ok(match op {
            TxOp::Publish { .. } => TxApplied::Listing {
                version: scripts::PublishReply::decode(r)?.version,
            },
            TxOp::UpdateListing { .. } => TxApplied::Listing {
                version: scripts::UpdateListingReply::decode(r)?.version,
            },
            TxOp::Append { stream, .. } => {
                self.appended(tenant, stream);
                TxApplied::Appended {
                    offset: scripts::AppendReply::decode(r)?.offset,
                }
            }
            TxOp::Enqueue { .. } | TxOp::OutboxPut { .. } => TxApplied::Enqueued {
                job: JobId::new(self.incarnation(), self.enqueued(r)?),
            },
            TxOp::Fail { .. } => TxApplied::Failed(super::queues::failed(r)?),
            TxOp::Notify { channel, payload } => {
                // Refused only once this handle has stopped.
                let _ = self
                    .inner
                    .wakes
                    .notify_with(&(tenant, Arc::clone(channel)), payload);
                TxApplied::Done
            }
            _ => TxApplied::Done,
        })
    }

    /// The call `op` makes as a plain operation, as a step.
    fn step(&self, tenant: TenantId, op: &TxOp) -> Result<Step> {
        let call = match op {
            TxOp::Publish { lease, key, attrs } => {
                self.publish_call(tenant, *lease, key, attrs, None)?
            }
            TxOp::UpdateListing {
                key,
                expected,
                attrs,
            } => self.update_listing_call(key, *expected, attrs)?,
            TxOp::Unpublish { key, expected } => self.end_listing_call(key, *expected, false)?,
            TxOp::Notify { channel, payload } => {
                self.config().check_notify(channel, payload)?;
                let message = self.wake_message(tenant, channel, payload);
                // Published by the function once the whole call succeeded.
                return Ok(Step {
                    op: "wake",
                    mode: Mode::Upserting,
                    issued: Issued::Nothing,
                    args: vec![
                        super::events::wakes_channel(&self.inner.namespace).into_bytes(),
                        message,
                    ],
                });
            }
            TxOp::Append { stream, payload } => self.append_call(tenant, stream, payload, None)?,
            TxOp::CommitOffset {
                stream,
                consumer,
                offset,
            } => self.commit_call(stream, consumer, *offset)?,
            TxOp::TrimStream { stream, before } => self.trim_stream_call(stream, *before)?,
            TxOp::Enqueue {
                queue,
                payload,
                options,
            } => {
                self.config().check_own_name(queue)?;
                self.enqueue_call(tenant, queue, &[payload], options)?
            }
            TxOp::OutboxPut { topic, payload } => {
                let framed = frame(&self.config(), topic, payload)?;
                let options = JobOptions::default();
                self.enqueue_call(tenant, OUTBOX_QUEUE, &[&framed], &options)?
            }
            TxOp::Ack { queue, job, claim } => {
                self.config().check_own_name(queue)?;
                self.ack_call(queue, *job, *claim)
            }
            TxOp::Fail {
                queue,
                job,
                claim,
                reason,
            } => {
                self.config().check_own_name(queue)?;
                self.fail_call(queue, *job, *claim, reason)?
            }
            TxOp::Schedule {
                name,
                spec,
                queue,
                payload,
            } => self.schedule_call(name, spec, queue, payload)?,
            TxOp::Unschedule { name } => self.unschedule_call(name)?,
        };
        Ok(Step::of(call))
    }
}
