//! The outbox, the same on every engine: the queue's settings, how a message
//! is framed into a job of [`OUTBOX_QUEUE`](crate::OUTBOX_QUEUE), and how one is handed to its
//! handler.

use crate::base::error::{Error, Result};
use crate::base::ids::JobId;
use crate::contract::config::StoreConfig;
use crate::contract::queue::{Backoff, ClaimedJob, QueueConfig};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

/// The settings of every outbox queue: claims held 60 s, 5 attempts,
/// backoff from 5 s to 300 s, 10,000 messages, 16 MiB, 1,000 dead letters
/// (a full dead-letter set refuses new messages until purged).
pub fn outbox_config() -> QueueConfig {
    QueueConfig {
        jobs_max: 10_000,
        bytes_max: 16 << 20,
        dead_letters_max: Some(1_000),
        visibility: Duration::from_secs(60),
        attempts_max: 5,
        backoff: Backoff {
            base: Duration::from_secs(5),
            max: Duration::from_secs(300),
        },
        jitter_seed: None,
    }
}

/// One outbox message, as the handler of
/// [`outbox_run_once`](crate::Store::outbox_run_once) sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxMessage {
    /// Its id (a job id of the outbox queue).
    pub id: JobId,
    /// Its topic.
    pub topic: Arc<str>,
    /// Its payload.
    pub payload: Arc<[u8]>,
    /// Which delivery attempt this is (1 for the first).
    pub attempt: u32,
}

/// What one [`outbox_run_once`](crate::Store::outbox_run_once) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutboxRun {
    /// Messages the handler accepted (now gone).
    pub delivered: usize,
    /// Messages that failed and will be retried after a backoff.
    pub retried: usize,
    /// Messages that failed their last attempt (now dead letters of
    /// [`OUTBOX_QUEUE`](crate::OUTBOX_QUEUE)).
    pub dead: usize,
}

/// An outbox message as its queue holds it: the topic's length (two
/// bytes, big-endian), the topic, the payload. `topic` is a name, and the
/// whole must fit `job_payload_bytes_max` (every engine's one rule).
pub(crate) fn frame(config: &StoreConfig, topic: &str, payload: &[u8]) -> Result<Vec<u8>> {
    config.check_name(topic)?;
    if 2 + topic.len() + payload.len() > config.job_payload_bytes_max {
        return Err(Error::InvalidArgument {
            reason: "topic and payload together are larger than job_payload_bytes_max",
        });
    }
    let mut framed = Vec::with_capacity(2 + topic.len() + payload.len());
    framed.extend_from_slice(&(topic.len() as u16).to_be_bytes());
    framed.extend_from_slice(topic.as_bytes());
    framed.extend_from_slice(payload);
    Ok(framed)
}

/// Hands one claimed outbox message to `handler` (a panic is caught):
/// `None` when it was delivered, else why not (at most `reason_max`
/// bytes, never empty), to fail it with. Every engine's one delivery rule.
pub(crate) fn deliver<E: std::fmt::Display>(
    job: &ClaimedJob,
    reason_max: usize,
    handler: &mut impl FnMut(&OutboxMessage) -> std::result::Result<(), E>,
) -> Option<String> {
    let (topic, payload) = unframe(&job.payload);
    let message = OutboxMessage {
        id: job.id,
        topic,
        payload,
        attempt: job.attempt,
    };
    let reason = match catch_unwind(AssertUnwindSafe(|| handler(&message))) {
        Ok(Ok(())) => return None,
        Ok(Err(e)) => truncate(&e.to_string(), reason_max),
        Err(_) => "the handler panicked".to_owned(),
    };
    Some(if reason.is_empty() {
        "failed".to_owned()
    } else {
        reason
    })
}

impl OutboxRun {
    /// Counts the ack of a delivered message.
    pub(crate) fn acked(&mut self, acked: Result<()>) {
        if acked.is_ok() {
            self.delivered += 1;
        }
    }

    /// Counts the failure of a message its handler refused.
    pub(crate) fn failed(&mut self, failed: Result<crate::contract::queue::Failed>) {
        match failed {
            Ok(crate::contract::queue::Failed::RetryIn(_)) => self.retried += 1,
            Ok(crate::contract::queue::Failed::DeadLettered) => self.dead += 1,
            // The claim lapsed while the handler ran: the message is
            // back in the outbox already.
            Err(_) => {}
        }
    }
}

fn unframe(framed: &[u8]) -> (Arc<str>, Arc<[u8]>) {
    let len = usize::from(u16::from_be_bytes([framed[0], framed[1]]));
    let topic = String::from_utf8_lossy(&framed[2..2 + len]);
    (Arc::from(topic.as_ref()), Arc::from(&framed[2 + len..]))
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn truncate(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}
