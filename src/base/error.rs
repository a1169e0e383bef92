//! The one public error type.

use crate::base::collection::{Collection, Kind};
use std::fmt;

/// Everything a store operation can refuse with.
///
/// Variants carry the data a caller needs to act (the current version on a
/// conflict, the full scope on a capacity refusal). Messages are lowercase
/// and stable; a probe of another tenant's id yields exactly the value a
/// missing id yields.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No such record (or it belongs to another tenant); for a join
    /// token, a token the store does not know: forged, garbled, long
    /// gone, or issued before a restart.
    #[error("not found")]
    NotFound,
    /// The record's deadline has passed; it is gone even if not yet swept.
    #[error("expired")]
    Expired,
    /// The record was explicitly revoked.
    #[error("revoked")]
    Revoked,
    /// The record is not in the state the call needs; `reason` says
    /// which situation this is, and so what the caller can do.
    #[error("conflict: {reason}")]
    Conflict {
        /// What the call ran into.
        reason: ConflictReason,
        /// The version of the record in the way (for
        /// [`ConflictReason::CommitBehind`] the consumer's committed
        /// offset, for [`ConflictReason::StreamMoved`] the stream's next
        /// offset): data for a retry, not for a log line.
        current_version: u64,
    },
    /// A one-time token was already consumed.
    #[error("token already consumed")]
    ReplayRejected,
    /// Admission refused: `scope` is at its limit. Nothing was changed.
    /// `limit` and `used` are in the scope's unit (records, listeners,
    /// jobs, payload bytes, ...), so a relay can tell its client exactly
    /// what is full.
    #[error("capacity exceeded: {scope} ({used} in use of {limit})")]
    CapacityExceeded {
        /// The limit that was full.
        scope: Scope,
        /// The limit's value.
        limit: u64,
        /// The use the refusal saw (another operation may have changed it
        /// since): at the limit, or so close that the request did not fit.
        used: u64,
    },
    /// The store is draining and takes no new work.
    #[error("store is draining")]
    Draining,
    /// The store cannot take or guarantee the operation now, so it refuses;
    /// `reason` says why, and so whether a retry can help.
    #[error("service unavailable: {reason}")]
    ServiceUnavailable {
        /// Why.
        reason: Unavailable,
    },
    /// The engine's backend (a Redis server, say) could not be reached,
    /// refused the call, or did not answer within its configured bound.
    /// The engine fails closed: the operation took effect entirely or not
    /// at all. `may_have_run` says whether the caller can tell which. The
    /// in-memory engine never returns it.
    #[error("backend unavailable ({}): {detail}", if *may_have_run { "the call may have run" } else { "the call did not run" })]
    BackendUnavailable {
        /// What failed, for logs (not a stable message).
        detail: std::sync::Arc<str>,
        /// `false` when the backend surely did not carry the call out: the
        /// connection was refused, or the server refused the call before
        /// running it (out of memory, a cluster redirect or a cluster
        /// down, a server loading or busy, a read-only replica, a missing
        /// permission). A retry is then as safe as the first try. `true`
        /// when the request may have reached it: a timeout or a connection
        /// lost after sending, or an answer that could not be read. Retry
        /// then with an idempotency key (`grant`, `publish`, `begin_join`
        /// take one) or read before writing again.
        may_have_run: bool,
    },
    /// The stream no longer holds the requested offset; `first` is the
    /// lowest offset it still holds.
    #[error("trimmed: the first offset held is {first}")]
    Trimmed {
        /// The lowest offset still readable.
        first: u64,
    },
    /// A stream of that name exists already, with other settings.
    #[error("exists with other settings")]
    Exists,
    /// The id (a lease's, an attempt's, a job's) or fence was issued by
    /// an earlier incarnation of the store. Never for a join token, which
    /// a client hands in: that is [`NotFound`](Self::NotFound).
    #[error("store restarted since this id was issued")]
    Restarted,
    /// A configuration value breaks a rule; `field` names it as the
    /// configuration spells it (`tenant.` for a tenant quota).
    #[error("invalid configuration: {field} {rule}{}", values_shown(.values))]
    InvalidConfig {
        /// The offending field.
        field: &'static str,
        /// The rule it breaks (naming the other field, for a rule on two).
        rule: &'static str,
        /// The values the rule was checked against, as `field = value`
        /// pairs (both fields of a rule on two: `ttl_min = 10ms, ttl_max =
        /// 1ms`); empty where there is no value to show (a missing clock, a
        /// URL that may hold a password).
        values: String,
    },
    /// An argument is outside its documented range.
    #[error("invalid argument: {reason}")]
    InvalidArgument {
        /// Which rule the argument broke.
        reason: &'static str,
    },
    /// A name is empty or malformed.
    #[error("invalid name")]
    InvalidName,
    /// A name uses the reserved `__` prefix.
    #[error("reserved name")]
    ReservedName,
    /// An idempotency key was reused with different parameters.
    #[error("idempotency key reused with different parameters")]
    IdempotencyMismatch,
    /// The same idempotency key is being processed right now; retry shortly.
    #[error("duplicate request in flight; retry")]
    InFlight,
    /// The claim is not the job's live claim: superseded by a later claim,
    /// another claim's token, or lapsed (its visibility passed). The job
    /// was left exactly as it was.
    #[error("stale claim: not the job's live claim")]
    StaleClaim,
    /// A unique enqueue whose key the queue's job `existing` holds (see
    /// `JobOptions::unique`): nothing was enqueued. A caller that wanted
    /// one such job queued has it.
    #[error("a job under this unique key is held: {existing:?}")]
    DuplicateJob {
        /// The job that holds the key.
        existing: crate::base::ids::JobId,
    },
    /// The runner no longer holds the scheduler lock (it lapsed, or a
    /// runner with a newer fence took it); it fired nothing.
    #[error("leadership lost: the scheduler lock is not this runner's")]
    LeadershipLost,
}

/// What an [`Error::Conflict`] ran into. Each situation is its own
/// reason, so a relay tells "someone else has that name" from "the client
/// skipped a step"; [`Display`](fmt::Display) says it in an operator's
/// words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConflictReason {
    /// A call that named the version it expects (`renew_at`,
    /// `update_listing`, `unpublish` with a version) found the record at
    /// another: it changed since that version was read.
    Version,
    /// A visible record holds the name: a listing published under the
    /// key, a record made under the name by another call.
    NameTaken,
    /// The member is present under another lease (or under none, where
    /// the call named one; or under one, where it named none).
    OtherLease,
    /// A consume of a join attempt not yet bound to an address: the
    /// client skipped `bind_endpoint`.
    NotBound,
    /// A bind of a join attempt already bound to another address: the
    /// token came from a second address.
    BoundElsewhere,
    /// A stream commit below the offset the consumer committed already:
    /// commits never go back.
    CommitBehind,
    /// A transaction's staged appends can no longer go in at the offsets
    /// they were staged at: the stream took other entries or trimmed
    /// past them since.
    StreamMoved,
}

impl ConflictReason {
    /// Every reason, in declaration order.
    pub const ALL: [ConflictReason; 7] = [
        ConflictReason::Version,
        ConflictReason::NameTaken,
        ConflictReason::OtherLease,
        ConflictReason::NotBound,
        ConflictReason::BoundElsewhere,
        ConflictReason::CommitBehind,
        ConflictReason::StreamMoved,
    ];

    /// The reason's words, as [`Display`](fmt::Display) prints them.
    pub const fn describe(self) -> &'static str {
        match self {
            ConflictReason::Version => "the record changed since the version given was read",
            ConflictReason::NameTaken => "the name is taken by a live record",
            ConflictReason::OtherLease => "the member is present under another lease",
            ConflictReason::NotBound => "the join attempt is not bound to an address yet",
            ConflictReason::BoundElsewhere => "the join attempt is bound to another address",
            ConflictReason::CommitBehind => "the offset is below the one the consumer committed",
            ConflictReason::StreamMoved => {
                "the stream moved past the offsets the appends were staged at"
            }
        }
    }
}

impl fmt::Display for ConflictReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

impl Error {
    /// This answer, as a call that took a join token gives it: `Restarted`
    /// (the token's attempt id is of another incarnation) becomes
    /// [`NotFound`](Self::NotFound), as for any token the store does not
    /// know. A token comes from a client, and text a client garbled or
    /// made up parses to an id of no incarnation at all; the store cannot
    /// tell it from a genuine token issued before a restart, so neither is
    /// reported as a restart.
    pub(crate) fn for_token(self) -> Error {
        match self {
            Error::Restarted => Error::NotFound,
            e => e,
        }
    }

    /// A [`Error::Conflict`] for `reason`, the record in the way at
    /// `current_version`.
    pub(crate) fn conflict(reason: ConflictReason, current_version: u64) -> Error {
        Error::Conflict {
            reason,
            current_version,
        }
    }
}

/// The limit that refused an admission, named in
/// [`Error::CapacityExceeded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// The store-wide ceiling of one collection (`leases_max`, ...; for
    /// [`Collection::Attempts`] the pending attempts, `attempts_max`; for
    /// [`Collection::Replay`] every attempt record, `replay_max`).
    Collection(Collection),
    /// A tenant's quota in one collection (for [`Collection::Streams`],
    /// `streams_per_tenant_max`).
    Tenant(Collection),
    /// A holder's quota within its tenant in one collection
    /// (`leases_per_holder_max`, `listings_per_holder_max`).
    Holder(Collection),
    /// A parent's cap on its children in one collection
    /// (`listings_per_lease_max`, `attempts_per_listing_max`, ...).
    Parent(Collection),
    /// The store-wide ceiling on registered tenants (`tenants_max`).
    Tenants,
    /// The store-wide ceiling on event subscribers (`subscribers_max`).
    Subscribers,
    /// The store-wide ceiling on wake listeners (`listeners_max`).
    Listeners,
    /// The cap on one wake channel's listeners
    /// (`listeners_per_channel_max`).
    ChannelListeners,
    /// A tenant's cap on wake channels with listeners
    /// (`channels_per_tenant_max`).
    TenantChannels,
    /// A stream created with `WhenFull::Refuse` is full.
    StreamEntries,
    /// A stream's cap on named consumers (`consumers_per_stream_max`).
    StreamConsumers,
    /// A consumer group's pending list holds its `pending_max` entries
    /// (dead ones included): the group delivers nothing new until some
    /// are acknowledged.
    StreamGroupPending,
    /// The store-wide budget of stream bytes: the streams' `bytes_max`
    /// together (`stream_bytes_total_max`).
    StreamBytesTotal,
    /// The store-wide budget of stream entries: the streams' `entries_max`
    /// together (`stream_entries_total_max`).
    StreamEntriesTotal,
    /// A queue's `jobs_max`: it holds that many jobs (dead letters
    /// included).
    QueueJobs,
    /// A queue's `bytes_max` of payload.
    QueueBytes,
    /// A queue holds `dead_letters_max` dead letters and takes no jobs
    /// until they are requeued or purged.
    QueueDeadLetters,
    /// A queue remembers `jobs_max` unique keys (its jobs' and those still
    /// in their window after their job left) and takes no more unique jobs
    /// until one lapses.
    QueueUniqueKeys,
    /// The store-wide budget of queue jobs: the queues' `jobs_max`
    /// together (`queue_jobs_total_max`).
    QueueJobsTotal,
    /// The store-wide budget of queue bytes: the queues' `bytes_max`
    /// together (`queue_bytes_total_max`).
    QueueBytesTotal,
    /// The ceiling of a `TtlMap` or of a quota `Counter` built outside a
    /// store (feature `internals`), by name.
    Named(&'static str),
    /// A declared record kind's store-wide ceiling (its `max`).
    KindCeiling(Kind),
    /// A declared record kind's quota per tenant (its `per_tenant_max`).
    KindTenant(Kind),
    /// A declared record kind's cap per lease (its `per_lease_max`).
    KindParent(Kind),
}

/// The values of an [`Error::InvalidConfig`] as its message shows them.
fn values_shown(values: &str) -> String {
    if values.is_empty() {
        String::new()
    } else {
        format!(" ({values})")
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Collection(c) => write!(f, "{} collection ceiling", c.name()),
            Scope::Tenant(c) => write!(f, "tenant quota for {}", c.name()),
            Scope::Holder(c) => write!(f, "per-holder quota for {}", c.name()),
            Scope::Parent(c) => write!(f, "per-parent cap on {}", c.name()),
            Scope::Tenants => f.write_str("tenants ceiling"),
            Scope::Subscribers => f.write_str("subscribers ceiling"),
            Scope::Listeners => f.write_str("listeners ceiling"),
            Scope::ChannelListeners => f.write_str("per-channel cap on listeners"),
            Scope::TenantChannels => f.write_str("tenant cap on wake channels"),
            Scope::StreamEntries => f.write_str("stream retention (refusing when full)"),
            Scope::StreamConsumers => f.write_str("per-stream cap on consumers"),
            Scope::StreamGroupPending => f.write_str("per-group cap on pending entries"),
            Scope::StreamBytesTotal => f.write_str("store-wide budget of stream bytes"),
            Scope::StreamEntriesTotal => f.write_str("store-wide budget of stream entries"),
            Scope::QueueJobs => f.write_str("per-queue cap on jobs"),
            Scope::QueueBytes => f.write_str("per-queue cap on payload bytes"),
            Scope::QueueDeadLetters => f.write_str("per-queue cap on dead letters"),
            Scope::QueueUniqueKeys => f.write_str("per-queue cap on unique keys"),
            Scope::QueueJobsTotal => f.write_str("store-wide budget of queue jobs"),
            Scope::QueueBytesTotal => f.write_str("store-wide budget of queue bytes"),
            Scope::Named(name) => write!(f, "{name} ceiling"),
            Scope::KindCeiling(kind) => write!(f, "store-wide ceiling on records of {kind}"),
            Scope::KindTenant(kind) => write!(f, "tenant quota for records of {kind}"),
            Scope::KindParent(kind) => write!(f, "per-lease cap on records of {kind}"),
        }
    }
}

/// Why the store refuses with [`Error::ServiceUnavailable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unavailable {
    /// The store has stopped (drained, or its last handle is going), and
    /// a blocked wait ended with it. Final for this incarnation: send the
    /// client to another instance.
    Stopped,
    /// The expiry driver has not swept for longer than `driver_stall_max`,
    /// so the store cannot guarantee that an expired token is refused:
    /// authorizations (join, bind, consume) are refused until it sweeps
    /// again. Transient: retry shortly; `health()` reports `Degraded`.
    DriverStalled,
    /// The operating system's random source failed (store incarnations,
    /// join tokens).
    Entropy,
    /// The builder could not start the background expiry driver thread.
    DriverNotStarted,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unavailable::Stopped => "the store has stopped",
            Unavailable::DriverStalled => "the expiry driver is stalled",
            Unavailable::Entropy => "the OS random source failed",
            Unavailable::DriverNotStarted => "the expiry driver could not be started",
        })
    }
}

impl Error {
    /// `ServiceUnavailable` because the store has stopped.
    pub const STOPPED: Error = Error::ServiceUnavailable {
        reason: Unavailable::Stopped,
    };

    /// A refusal by `scope`, whose `limit` saw `used` units in use.
    pub(crate) fn capacity(scope: Scope, limit: u64, used: u64) -> Self {
        Error::CapacityExceeded { scope, limit, used }
    }

    /// A backend failure; `may_have_run` as in [`Error::BackendUnavailable`].
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn backend(detail: impl Into<std::sync::Arc<str>>, may_have_run: bool) -> Self {
        Error::BackendUnavailable {
            detail: detail.into(),
            may_have_run,
        }
    }

    /// Whether the call may have taken effect although it failed: only a
    /// [`BackendUnavailable`](Error::BackendUnavailable) whose request may
    /// have reached the backend. Every other error changed nothing.
    pub fn may_have_run(&self) -> bool {
        matches!(
            self,
            Error::BackendUnavailable {
                may_have_run: true,
                ..
            }
        )
    }

    /// Whether the same call may succeed if tried again shortly, with
    /// nothing else changed: the backend unreachable or refusing for now
    /// ([`BackendUnavailable`](Error::BackendUnavailable)), the expiry
    /// driver stalled, the OS random source failing. A stopped store, a
    /// refusal of the request itself, or a record's state are not.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::BackendUnavailable { .. }
                | Error::ServiceUnavailable {
                    reason: Unavailable::DriverStalled | Unavailable::Entropy
                }
        )
    }

    /// The scope of a capacity refusal, if this is one.
    pub fn capacity_scope(&self) -> Option<Scope> {
        match self {
            Error::CapacityExceeded { scope, .. } => Some(*scope),
            _ => None,
        }
    }
}

/// Shorthand for results of store operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    /// Each conflict says its own situation in words, and the version
    /// stays out of the message.
    #[test]
    fn a_conflict_says_what_happened_without_its_version() {
        let mut seen = std::collections::HashSet::new();
        for reason in ConflictReason::ALL {
            let text = Error::conflict(reason, 1_796_685_819_496_117).to_string();
            assert_eq!(text, format!("conflict: {}", reason.describe()));
            assert!(!text.contains("1796685819496117"), "{text}");
            assert!(seen.insert(text), "{reason:?} reads as another");
        }
        assert_eq!(
            Error::conflict(ConflictReason::NotBound, 3).to_string(),
            "conflict: the join attempt is not bound to an address yet"
        );
    }
}
