//! The store's collections, named once: what a removal event names, what a
//! capacity refusal's scope names, and what every per-collection table
//! (limits, metric labels, Redis letters) is indexed by.

/// A collection of the store: what a removal event names, and what a
/// capacity refusal's [`Scope`](crate::Scope) names.
///
/// Join attempts are one table with two bounds. [`Attempts`](Self::Attempts)
/// names pending or bound attempts (bounded by `attempts_max`, per tenant
/// and per listing); [`Replay`](Self::Replay) names every attempt record,
/// consumed tokens remembered for replay rejection included (bounded by
/// `replay_max`), which is the table's own ceiling.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Collection {
    /// Leases.
    Leases,
    /// Published listings.
    Listings,
    /// Presence records.
    Presence,
    /// Join attempts (pending or bound).
    Attempts,
    /// Attempt records including the replay memory of consumed tokens (as
    /// an event: a consumed token's memory left).
    Replay,
    /// Idempotency records.
    Idempotency,
    /// Revocation tombstones.
    Tombstones,
    /// Named locks.
    Locks,
    /// Streams (their removal: deleted, or cascaded with their lease).
    Streams,
    /// Job queues (their removal: deleted, with every job in them).
    Queues,
    /// Interval schedules (their removal: unscheduled).
    Schedules,
}

impl Collection {
    /// Every collection, in declaration order: what per-collection data is
    /// indexed by (`Collection as usize`).
    pub const ALL: [Collection; 11] = [
        Collection::Leases,
        Collection::Listings,
        Collection::Presence,
        Collection::Attempts,
        Collection::Replay,
        Collection::Idempotency,
        Collection::Tombstones,
        Collection::Locks,
        Collection::Streams,
        Collection::Queues,
        Collection::Schedules,
    ];

    /// The collection's name, as a refusal's message shows it.
    pub(crate) fn scope_name(self) -> &'static str {
        match self {
            Collection::Leases => "leases",
            Collection::Listings => "listings",
            Collection::Presence => "presence",
            Collection::Attempts => "attempts",
            Collection::Replay => "replay",
            Collection::Idempotency => "idempotency",
            Collection::Tombstones => "tombstones",
            Collection::Locks => "locks",
            Collection::Streams => "streams",
            Collection::Queues => "queues",
            Collection::Schedules => "schedules",
        }
    }
}

// `ALL[i] as usize == i`: per-collection arrays are indexed by the enum.
const _: () = {
    let mut i = 0;
    while i < Collection::ALL.len() {
        assert!(Collection::ALL[i] as usize == i);
        i += 1;
    }
};
