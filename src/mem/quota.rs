//! Admission counters and all-or-nothing reservations.
//!
//! A [`Counter`] bounds one scope (a collection's ceiling, a tenant's quota,
//! a parent's children). Acquiring is a compare-and-swap that never lets the
//! count exceed the limit, not even for an instant, so a refusal is never
//! caused by another thread's doomed attempt. A [`Reservation`] holds units
//! in up to [`SCOPES_MAX`] counters at once: it is taken for all of them or
//! for none, and it gives everything back when dropped (including during a
//! panic) unless the operation it guards [`commit`](Reservation::commit)s.
//!
//! Each counter is padded to its own cache line, so two hot counters never
//! slow each other down by sharing one.

use crate::base::error::{Error, Scope};
use crate::base::sync::{AtomicU64, Ordering};
use crate::mem::record::CAS_ATTEMPTS_MAX;
use crossbeam_utils::CachePadded;

/// Most scopes one reservation can span.
pub const SCOPES_MAX: usize = 4;

/// A bounded count of units in use for one scope.
#[derive(Debug)]
pub struct Counter {
    used: CachePadded<AtomicU64>,
    /// The limit single-counter admissions check; a store changes it at
    /// run time (`Store::reconfigure`), and admissions that check several
    /// counters take their limits from one snapshot instead
    /// ([`acquire_under`](Self::acquire_under)).
    limit: AtomicU64,
    scope: Scope,
    /// False for a scope whose quota is switched off: nothing is counted.
    counted: bool,
}

impl Counter {
    /// A counter for `scope` that admits at most `limit` units.
    pub fn new(scope: Scope, limit: u64) -> Self {
        Counter {
            used: CachePadded::new(AtomicU64::new(0)),
            limit: AtomicU64::new(limit),
            scope,
            counted: true,
        }
    }

    /// A scope with no quota: every acquire succeeds and touches no shared
    /// memory, every release is a no-op, and [`used`](Self::used) stays 0.
    /// For per-tenant quotas that an operator switched off; store-wide
    /// ceilings are always counted.
    pub fn uncounted(scope: Scope) -> Self {
        Counter {
            used: CachePadded::new(AtomicU64::new(0)),
            limit: AtomicU64::new(u64::MAX),
            scope,
            counted: false,
        }
    }

    /// False for an [`uncounted`](Self::uncounted) scope.
    pub fn is_counted(&self) -> bool {
        self.counted
    }

    /// Units currently held.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// The most units this counter admits.
    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Acquire)
    }

    /// Changes the limit. Lowering it below the units held evicts nothing:
    /// acquires are refused until enough are released.
    pub fn set_limit(&self, limit: u64) {
        if self.counted {
            self.limit.store(limit, Ordering::Release);
        }
    }

    /// The scope this counter bounds.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// Takes `n` units if they fit under the limit; `false` changes nothing.
    ///
    /// The retry loop is bounded: a CAS fails only when another thread
    /// changed the count, and after [`CAS_ATTEMPTS_MAX`] such losses the
    /// attempt is refused as if full rather than spinning.
    pub fn try_acquire(&self, n: u64) -> bool {
        self.acquire(n).is_ok()
    }

    /// [`try_acquire`](Self::try_acquire), refusing with
    /// `CapacityExceeded` naming the scope, its limit and the use it saw.
    pub fn acquire(&self, n: u64) -> Result<(), Error> {
        self.acquire_under(n, self.limit())
    }

    /// [`acquire`](Self::acquire) against `limit` instead of the counter's
    /// own: for an admission that takes all its limits from one snapshot
    /// of the configuration.
    pub fn acquire_under(&self, n: u64, limit: u64) -> Result<(), Error> {
        if !self.counted {
            return Ok(());
        }
        let mut used = self.used.load(Ordering::Acquire);
        for _ in 0..CAS_ATTEMPTS_MAX {
            let Some(next) = used.checked_add(n).filter(|&next| next <= limit) else {
                return Err(Error::capacity(self.scope, limit, used));
            };
            match self.cas(used, next) {
                Ok(()) => return Ok(()),
                Err(actual) => used = actual,
            }
        }
        Err(Error::capacity(self.scope, limit, used))
    }

    /// The refusal of this scope, having seen `used` units in use.
    pub fn refusal(&self, used: u64) -> Error {
        Error::capacity(self.scope, self.limit(), used)
    }

    /// Gives back `n` units previously acquired.
    pub fn release(&self, n: u64) {
        if !self.counted {
            return;
        }
        let before = self.used.fetch_sub(n, Ordering::AcqRel);
        debug_assert!(before >= n, "{} released {n} of {before} units", self.scope);
    }

    /// The one compare-and-swap of the count. (In the model-checking build
    /// a fault switch can split it into a load-check-store, the broken twin
    /// the loom model must catch; elsewhere that branch is compiled away.)
    fn cas(&self, current: u64, next: u64) -> Result<(), u64> {
        if crate::base::faults::blind_stores() {
            self.used.store(next, Ordering::Release);
            return Ok(());
        }
        self.used
            .compare_exchange(current, next, Ordering::AcqRel, Ordering::Acquire)
            .map(drop)
    }
}

/// Units held in several counters; released on drop unless committed.
#[must_use = "a reservation is released as soon as it is dropped"]
#[derive(Debug)]
pub struct Reservation<'a> {
    held: [Option<(&'a Counter, u64)>; SCOPES_MAX],
}

impl<'a> Reservation<'a> {
    /// Acquires every `(counter, units, limit)` triple against its `limit`,
    /// or none of them (see [`Counter::acquire_under`]).
    pub fn acquire_under(parts: &[(&'a Counter, u64, u64)]) -> Result<Self, Error> {
        if parts.len() > SCOPES_MAX {
            return Err(Error::InvalidArgument {
                reason: "a reservation spans at most SCOPES_MAX scopes",
            });
        }
        let mut reservation = Reservation {
            held: [None; SCOPES_MAX],
        };
        for (i, &(counter, units, limit)) in parts.iter().enumerate() {
            counter.acquire_under(units, limit)?;
            reservation.held[i] = Some((counter, units));
        }
        Ok(reservation)
    }

    /// Acquires every `(counter, units)` pair, or none of them.
    ///
    /// On refusal the error names the first full scope, and every counter is
    /// exactly as it was. Passing more than [`SCOPES_MAX`] pairs is an
    /// [`Error::InvalidArgument`].
    pub fn acquire(parts: &[(&'a Counter, u64)]) -> Result<Self, Error> {
        if parts.len() > SCOPES_MAX {
            return Err(Error::InvalidArgument {
                reason: "a reservation spans at most SCOPES_MAX scopes",
            });
        }
        let mut reservation = Reservation {
            held: [None; SCOPES_MAX],
        };
        for (i, &(counter, units)) in parts.iter().enumerate() {
            // On refusal `reservation` drops and releases what it holds.
            counter.acquire(units)?;
            reservation.held[i] = Some((counter, units));
        }
        Ok(reservation)
    }

    /// Keeps the units: the operation succeeded and now owns them.
    pub fn commit(mut self) {
        self.held = [None; SCOPES_MAX];
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        for (counter, units) in self.held.iter().flatten() {
            counter.release(*units);
        }
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use crate::contract::events::Collection;

    #[test]
    fn an_uncounted_scope_admits_everything_and_counts_nothing() {
        let off = Counter::uncounted(Scope::Tenant(Collection::Leases));
        let on = Counter::new(Scope::Collection(Collection::Leases), 2);
        assert!(!off.is_counted() && on.is_counted());
        for _ in 0..3 {
            assert!(off.try_acquire(u64::MAX));
        }
        off.release(7);
        assert_eq!(off.used(), 0);
        // In a reservation, only the counted scope can refuse.
        let held = Reservation::acquire(&[(&off, 1), (&on, 2)]).unwrap();
        assert_eq!(
            Reservation::acquire(&[(&off, 1), (&on, 1)]).unwrap_err(),
            Error::CapacityExceeded {
                scope: Scope::Collection(Collection::Leases),
                limit: 2,
                used: 2,
            }
        );
        drop(held);
        assert_eq!((off.used(), on.used()), (0, 0));
    }
}
