//! What an engine says of its own health, the same on every engine.

use std::time::Duration;

/// Why a store is [`Health::Degraded`].
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DegradedReason {
    /// The expiry driver has not swept for longer than `driver_stall_max`,
    /// so expiry, and with it the validity of tokens, cannot be
    /// guaranteed: joins, binds and consumes are refused with
    /// `ServiceUnavailable` until the next sweep.
    DriverStalled,
    /// A remote engine's backend (a Redis server) did not answer within
    /// the engine's call timeout: operations fail closed with
    /// `BackendUnavailable` until it answers again.
    BackendUnreachable,
    /// A remote engine's backend (a Redis primary) is at its memory limit:
    /// it refuses creations with `BackendUnavailable` (reads and removals
    /// still run, so revoking frees room) until memory is freed.
    BackendFull,
    /// A remote engine's backend (a Redis primary) has fewer replicas
    /// attached than the engine's writes wait for: those writes fail
    /// closed with `BackendUnavailable` until the replicas are back.
    TooFewReplicas,
}

impl std::fmt::Display for DegradedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DegradedReason::DriverStalled => f.write_str("expiry driver stalled"),
            DegradedReason::BackendUnreachable => f.write_str("backend unreachable"),
            DegradedReason::BackendFull => f.write_str("backend at its memory limit"),
            DegradedReason::TooFewReplicas => f.write_str("backend short of replicas"),
        }
    }
}

/// Readiness of a store, for a readiness probe: anything but `Ready` takes
/// the node out of rotation.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Health {
    /// Accepting all operations.
    Ready,
    /// Up, but refusing authorizations (joins, binds, consumes) for
    /// `reason`; the rest works. Ready again once the cause is gone.
    Degraded {
        /// Why.
        reason: DegradedReason,
    },
    /// Refusing new grants, publishes, joins, presence and locks with
    /// `Draining`; existing records keep working until the drain ends.
    Draining {
        /// Time left before the drain ends and every remaining lease is
        /// revoked.
        remaining: Duration,
    },
    /// The drain window has passed: new work, authorizations and
    /// renewals are refused with `ServiceUnavailable` (removals still
    /// answer). The in-memory store's next sweep revokes what remains;
    /// the engine's `drained` resolves when that is done.
    Stopped,
}

/// The state in a word or two, for a probe's body or a log line:
/// `ready`, `degraded: expiry driver stalled`, `draining: 2.5s left`,
/// `stopped`.
impl std::fmt::Display for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Health::Ready => f.write_str("ready"),
            Health::Degraded { reason } => write!(f, "degraded: {reason}"),
            Health::Draining { remaining } => write!(f, "draining: {remaining:?} left"),
            Health::Stopped => f.write_str("stopped"),
        }
    }
}
