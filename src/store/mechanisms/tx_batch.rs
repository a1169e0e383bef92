//! The contract's transactions on the in-memory store: a [`TxBatch`] is
//! staged on a [`Transaction`](crate::store::Transaction), which owns how a
//! commit stays atomic (ADR 0028), and its results are read back in
//! staging order (ADR 0069).

use crate::base::error::Result;
use crate::contract::tx::{TxApplied, TxBatch, TxOp, TxOutcome};
use crate::store::Store;

/// A staged change's result: known at staging, or read from the commit.
enum Pending {
    Known(TxApplied),
    /// A publish or an update of the listing at this position.
    Listing(usize),
    /// A failure of the job at this position.
    Failed(usize),
}

impl Store {
    /// Commits `batch` all or none ([`Engine::commit_tx`](crate::Engine::commit_tx)):
    /// each change is staged as [`Store::begin_tx`]'s transaction stages
    /// it (refused there as there) and the transaction committed.
    pub fn commit_tx(&self, batch: TxBatch) -> Result<TxOutcome> {
        let t = batch.tenant();
        let mut tx = self.begin_tx();
        let mut pending = Vec::with_capacity(batch.len());
        for (at, op) in batch.ops().iter().enumerate() {
            use TxApplied::{Appended, Done, Enqueued};
            pending.push(match op {
                TxOp::Publish { lease, key, attrs } => {
                    tx.publish(t, *lease, key, attrs)?;
                    Pending::Listing(at)
                }
                TxOp::UpdateListing {
                    key,
                    expected,
                    attrs,
                } => {
                    tx.update_listing(t, key, *expected, attrs)?;
                    Pending::Listing(at)
                }
                TxOp::Unpublish { key, expected } => {
                    tx.unpublish(t, key, *expected)?;
                    Pending::Known(Done)
                }
                TxOp::Notify { channel, payload } => {
                    tx.notify_with(t, channel, payload)?;
                    Pending::Known(Done)
                }
                TxOp::Append { stream, payload } => Pending::Known(Appended {
                    offset: tx.append(t, stream, payload)?,
                }),
                TxOp::CommitOffset {
                    stream,
                    consumer,
                    offset,
                } => {
                    tx.commit_offset(t, stream, consumer, *offset)?;
                    Pending::Known(Done)
                }
                TxOp::TrimStream { stream, before } => {
                    tx.trim_stream(t, stream, *before)?;
                    Pending::Known(Done)
                }
                TxOp::Enqueue {
                    queue,
                    payload,
                    options,
                } => Pending::Known(Enqueued {
                    job: tx.enqueue(t, queue, payload, options.clone())?,
                }),
                TxOp::OutboxPut { topic, payload } => Pending::Known(Enqueued {
                    job: tx.outbox_put(t, topic, payload)?,
                }),
                TxOp::Ack { queue, job, claim } => {
                    tx.ack(t, queue, *job, *claim)?;
                    Pending::Known(Done)
                }
                TxOp::Fail {
                    queue,
                    job,
                    claim,
                    reason,
                } => {
                    tx.fail(t, queue, *job, *claim, reason)?;
                    Pending::Failed(at)
                }
                TxOp::Schedule {
                    name,
                    spec,
                    queue,
                    payload,
                } => {
                    tx.schedule(t, name, spec, queue, payload)?;
                    Pending::Known(Done)
                }
                TxOp::Unschedule { name } => {
                    tx.unschedule(t, name)?;
                    Pending::Known(Done)
                }
            });
        }
        let committed = tx.commit()?;
        let ops = batch.ops();
        let applied = pending
            .into_iter()
            .map(|p| match p {
                Pending::Known(a) => a,
                Pending::Listing(at) => {
                    let key = match &ops[at] {
                        TxOp::Publish { key, .. } | TxOp::UpdateListing { key, .. } => key,
                        _ => unreachable!("a listing's position holds a listing change"),
                    };
                    let version = committed
                        .listing_version(t, key)
                        .expect("a committed listing change has a version");
                    TxApplied::Listing { version }
                }
                Pending::Failed(at) => {
                    let TxOp::Fail { job, .. } = &ops[at] else {
                        unreachable!("a failure's position holds a failure")
                    };
                    let (_, failed) = committed
                        .failed
                        .iter()
                        .find(|(j, _)| j == job)
                        .expect("a committed failure has an outcome");
                    TxApplied::Failed(*failed)
                }
            })
            .collect();
        Ok(TxOutcome { batch, applied })
    }
}
