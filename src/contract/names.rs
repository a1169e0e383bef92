//! The names the store reserves for itself, the same on every engine: a
//! caller's stream, queue, lock or wake channel may not start with
//! [`RESERVED_PREFIX`].

/// Names starting with this prefix are reserved for the store itself.
pub const RESERVED_PREFIX: &str = "__";

/// The reserved queue that holds a tenant's outbox.
pub const OUTBOX_QUEUE: &str = "__relaystore_outbox";

/// The reserved named lock whose holder runs a tenant's schedules.
pub const SCHEDULER_LOCK: &str = "__relaystore_scheduler";

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
    }
}
