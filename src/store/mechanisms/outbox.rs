//! The outbox: messages about changes, delivered at least once by
//! `outbox_run_once`, on a queue of the store's own per tenant.

use crate::base::error::{Error, Result};
use crate::base::ids::{JobId, TenantId};
use crate::base::name::Name;
use crate::base::sync::Arc;
use crate::contract::names::OUTBOX_QUEUE;
use crate::contract::outbox::OutboxMessage;
use crate::contract::outbox::OutboxRun;
use crate::contract::outbox::{deliver, frame, outbox_config};
use crate::contract::queue::JobOptions;
use crate::store::Store;

impl Store {
    /// Puts a message on the tenant's outbox (created on first use with
    /// [`outbox_config`], taking one of the tenant's queues). Refusals as
    /// for [`enqueue`](Self::enqueue); `topic` is a name, and the topic
    /// and payload together (plus 2 bytes) must fit
    /// `job_payload_bytes_max`.
    ///
    /// With an idempotency key, a repeat (the same topic and payload,
    /// under the same key, within `idempotency_ttl`) answers the message
    /// it put and puts none, as an [`enqueue`](Self::enqueue) under a key
    /// does: an outbox put that failed with `may_have_run` is safe to retry.
    pub fn outbox_put(
        &self,
        tenant: TenantId,
        topic: &str,
        payload: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<JobId> {
        let framed = self.outbox_frame(topic, payload)?;
        let options = JobOptions {
            idempotency_key: idempotency_key.map(Name::new),
            ..JobOptions::default()
        };
        let enqueued = self.enqueue_keyed(tenant, OUTBOX_QUEUE, &[&framed], &options);
        let first = match enqueued {
            Err(Error::NotFound) => {
                self.outbox_create(tenant)?;
                self.enqueue_keyed(tenant, OUTBOX_QUEUE, &[&framed], &options)?
            }
            other => other?,
        };
        Ok(self.job_id(first))
    }

    /// Creates the tenant's outbox queue (a no-op if it exists).
    pub(in crate::store) fn outbox_create(&self, tenant: TenantId) -> Result<()> {
        self.create_queue_named(tenant, Arc::from(OUTBOX_QUEUE), outbox_config())
    }

    /// An outbox message as its queue holds it ([`frame`]).
    pub(in crate::store) fn outbox_frame(&self, topic: &str, payload: &[u8]) -> Result<Vec<u8>> {
        frame(&self.shared.config, topic, payload)
    }

    /// Delivers up to `max` due messages of the tenant's outbox through
    /// `handler`, as `worker`: `Ok` acknowledges a message; `Err`, or a
    /// panic (caught), fails it, to be retried after the outbox backoff or
    /// dead-lettered after its last attempt. Nothing is lost either way.
    pub fn outbox_run_once<E: std::fmt::Display>(
        &self,
        tenant: TenantId,
        worker: &str,
        max: usize,
        mut handler: impl FnMut(&OutboxMessage) -> std::result::Result<(), E>,
    ) -> Result<OutboxRun> {
        let claimed = match self.claim_in(tenant, OUTBOX_QUEUE, worker, None, max) {
            Err(Error::NotFound) => return Ok(OutboxRun::default()),
            other => other?,
        };
        let mut run = OutboxRun::default();
        for job in claimed {
            match deliver(&job, self.shared.config.name_bytes_max, &mut handler) {
                None => run.acked(self.ack_in(tenant, OUTBOX_QUEUE, job.id, job.claim)),
                Some(reason) => {
                    run.failed(self.fail_in(tenant, OUTBOX_QUEUE, job.id, job.claim, &reason))
                }
            }
        }
        Ok(run)
    }
}
