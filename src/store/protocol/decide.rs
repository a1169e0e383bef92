//! The store's transition decisions, as pure functions.
//!
//! Each decision is taken inside the closure that holds the record's shard
//! write lock, so deciding and writing are one step; here they are plain
//! functions of the record's state, which the tables below check case by
//! case. This is also the one place where the model-checking build swaps a
//! decision for its broken twin ([`crate::base::faults`]); in every other build
//! `faults::active` is a constant `false` and the twin folds away.

use crate::base::error::{ConflictReason, Error, Result};
use crate::base::faults::{active, StoreFault};
use std::net::SocketAddr;

/// Where a join attempt is: waiting for its bind, bound to the endpoint
/// its client was observed at, or consumed (then kept as a replay record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Pending,
    Bound(SocketAddr),
    Consumed(SocketAddr),
}

impl Phase {
    pub(in crate::store) fn is_consumed(self) -> bool {
        matches!(self, Phase::Consumed(_))
    }
}

/// What a bind of `observed` does to an attempt in `phase` at `version`:
/// `Ok(Some(next))` moves it (Pending -> Bound), `Ok(None)` repeats the
/// winning bind, `Err` refuses.
pub(in crate::store) fn bind(
    phase: Phase,
    observed: SocketAddr,
    version: u64,
) -> Result<Option<Phase>> {
    if active(StoreFault::BindIgnoresPhase) {
        return Ok(Some(Phase::Bound(observed)));
    }
    match phase {
        Phase::Pending => Ok(Some(Phase::Bound(observed))),
        Phase::Bound(addr) if addr == observed => Ok(None),
        Phase::Bound(_) => Err(Error::conflict(ConflictReason::BoundElsewhere, version)),
        Phase::Consumed(_) => Err(Error::ReplayRejected),
    }
}

/// What a consume does to an attempt in `phase` at `version`: the address
/// to admit (the attempt becomes `Consumed` with it), or why not.
pub(in crate::store) fn consume(phase: Phase, version: u64) -> Result<SocketAddr> {
    match phase {
        Phase::Bound(addr) => Ok(addr),
        Phase::Consumed(addr) if active(StoreFault::ConsumeIgnoresPhase) => Ok(addr),
        Phase::Pending => Err(Error::conflict(ConflictReason::NotBound, version)),
        Phase::Consumed(_) => Err(Error::ReplayRejected),
    }
}

/// Whether a release with `fence` may remove a lock held with `held`.
pub(in crate::store) fn release(held: u64, fence: u64) -> bool {
    held == fence || active(StoreFault::ReleaseUnfenced)
}

/// Whether a key held by a record that is still visible is taken.
pub(in crate::store) fn key_taken(holder_visible: bool) -> bool {
    holder_visible && !active(StoreFault::KeyHolderIgnored)
}

/// Whether a revocation writes the lease's tombstone before removing the
/// lease (so a renewal that misses the lease finds the tombstone).
pub(in crate::store) fn tombstone_first() -> bool {
    !active(StoreFault::TombstoneAfterRemoval)
}

/// Whether a join registers its attempt with its listing.
pub(in crate::store) fn join_attaches() -> bool {
    !active(StoreFault::JoinWithoutAttach)
}

/// Whether a creation takes a unit of its table's ceiling before its
/// narrow scopes are decided (never; the order the protocol forbids).
pub(in crate::store) fn shared_scope_first() -> bool {
    active(StoreFault::SharedScopeFirst)
}

/// Whether a creation reads each limit from its counter, one at a time
/// (never; it reads them all from one snapshot of the configuration).
pub(in crate::store) fn limits_read_apart() -> bool {
    active(StoreFault::LimitsReadApart)
}

/// Whether a creation that committed looks at the store's state, to take
/// its record back if a drain stopped the store meanwhile.
pub(in crate::store) fn stop_checked() -> bool {
    !active(StoreFault::StopUnchecked)
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    fn at(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    #[test]
    fn bind_decisions() {
        let cases = [
            (Phase::Pending, Ok(Some(Phase::Bound(at(1))))),
            (Phase::Bound(at(1)), Ok(None)),
            (
                Phase::Bound(at(2)),
                Err(Error::Conflict {
                    reason: ConflictReason::BoundElsewhere,
                    current_version: 7,
                }),
            ),
            (Phase::Consumed(at(1)), Err(Error::ReplayRejected)),
        ];
        for (phase, want) in cases {
            assert_eq!(bind(phase, at(1), 7), want, "{phase:?}");
        }
    }

    #[test]
    fn consume_decisions() {
        let cases = [
            (Phase::Bound(at(1)), Ok(at(1))),
            (
                Phase::Pending,
                Err(Error::Conflict {
                    reason: ConflictReason::NotBound,
                    current_version: 7,
                }),
            ),
            (Phase::Consumed(at(1)), Err(Error::ReplayRejected)),
        ];
        for (phase, want) in cases {
            assert_eq!(consume(phase, 7), want, "{phase:?}");
        }
    }

    #[test]
    fn release_and_key_decisions() {
        assert!(release(5, 5));
        assert!(!release(5, 4) && !release(4, 5));
        assert!(key_taken(true) && !key_taken(false));
        assert!(tombstone_first() && join_attaches() && !shared_scope_first());
        assert!(!limits_read_apart() && stop_checked());
    }
}
