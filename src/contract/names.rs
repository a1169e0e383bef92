//! The names the store reserves for itself, the same on every engine: a
//! caller's stream, queue, lock or wake channel may not start with
//! [`RESERVED_PREFIX`].

use std::sync::Arc;

/// Names starting with this prefix are reserved for the store itself.
pub const RESERVED_PREFIX: &str = "__";

/// The reserved queue that holds a tenant's outbox.
pub const OUTBOX_QUEUE: &str = "__relaystore_outbox";

/// The reserved named lock whose holder runs a tenant's schedules.
pub const SCHEDULER_LOCK: &str = "__relaystore_scheduler";

/// The reserved name of a queue's wake channel: notified when jobs become
/// ready, so waiting workers wake on every engine.
pub(crate) fn queue_wake_channel(queue: &str) -> Arc<str> {
    Arc::from(format!("{RESERVED_PREFIX}queue:{queue}"))
}

/// The reserved name of a stream's wake channel: notified on appends, so
/// followers wake on every engine.
pub(crate) fn stream_wake_channel(stream: &str) -> Arc<str> {
    Arc::from(format!("{RESERVED_PREFIX}stream:{stream}"))
}

/// The reason recorded for a job whose last claim lapsed.
pub(crate) const LAPSED: &str = "visibility lapsed";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stores_own_names_are_reserved() {
        for name in [OUTBOX_QUEUE, SCHEDULER_LOCK] {
            assert!(name.starts_with(RESERVED_PREFIX), "{name}");
            assert!(name.len() > RESERVED_PREFIX.len(), "{name}");
        }
        assert_ne!(OUTBOX_QUEUE, SCHEDULER_LOCK);
        for channel in [queue_wake_channel("jobs"), stream_wake_channel("jobs")] {
            assert!(channel.starts_with(RESERVED_PREFIX), "{channel}");
        }
        assert_ne!(queue_wake_channel("jobs"), stream_wake_channel("jobs"));
    }
}
