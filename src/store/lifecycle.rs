//! Lifecycle: health, drain, and the fail-closed admission checks.
//!
//! A store is `Ready`, then (after [`Store::begin_drain`]) `Draining` until
//! its drain deadline, then `Stopped`. The transition to `Stopped` happens at
//! the first sweep, health probe or admission check at or past the deadline,
//! so with the driver running a drain ends within its window plus one tick,
//! whatever callers do. Exactly one caller wins the transition and revokes
//! every remaining lease (cause `Drained`).

use super::tenant::any;
use super::Store;
use crate::base::error::{Error, Result, Unavailable};
use crate::base::sync::Ordering;
use crate::base::time::MonoTime;
use crate::contract::events::Cause;
use crate::contract::lifecycle::DegradedReason;
use crate::contract::lifecycle::Health;
use std::time::Duration;

pub(super) const READY: u64 = 0;
pub(super) const DRAINING: u64 = 1;
pub(super) const STOPPED: u64 = 2;

impl Store {
    /// The store's readiness. Also completes a drain whose deadline passed.
    pub fn health(&self) -> Health {
        let now = self.shared.clock.now();
        self.finish_drain_if_due(now);
        match self.shared.state.load(Ordering::Acquire) {
            READY if self.driver_stalled(now) => Health::Degraded {
                reason: DegradedReason::DriverStalled,
            },
            READY => Health::Ready,
            DRAINING => Health::Draining {
                remaining: MonoTime::from_millis(
                    self.shared.drain_deadline_ms.load(Ordering::Acquire),
                )
                .saturating_since(now),
            },
            _ => Health::Stopped,
        }
    }

    /// Starts draining: from now on new grants, publishes, joins, presence
    /// records and locks are refused with [`Error::Draining`], while renew,
    /// release, bind and consume of existing records keep working. At
    /// `now + window` every remaining lease (and everything attached) is
    /// revoked with cause `Drained` and the store stops. Calling it again
    /// while draining keeps the earlier deadline. Returns the time left
    /// before the drain ends.
    ///
    /// A `window` longer than `drain_window_max` is
    /// [`Error::InvalidArgument`] and changes nothing.
    pub fn begin_drain(&self, window: Duration) -> Result<Duration> {
        let _in = self.enter();
        self.shared.config.check_drain_window(window)?;
        let now = self.shared.clock.now();
        let deadline = now.saturating_add(window).as_millis();
        match self.shared.state.compare_exchange(
            READY,
            DRAINING,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                self.shared
                    .drain_deadline_ms
                    .store(deadline, Ordering::Release);
                tracing::info!(
                    window_ms = window.as_millis() as u64,
                    "relaystore draining: new work is refused; remaining leases are revoked when the window ends",
                );
            }
            Err(STOPPED) => return Err(Error::STOPPED),
            Err(_) => {}
        }
        self.finish_drain_if_due(now);
        Ok(
            MonoTime::from_millis(self.shared.drain_deadline_ms.load(Ordering::Acquire))
                .saturating_since(now),
        )
    }

    /// Admission for new work (grants, publishes, joins, new presence and
    /// locks): `Draining` while draining, `ServiceUnavailable` once stopped.
    pub(super) fn admit_new(&self, now: MonoTime) -> Result<()> {
        self.finish_drain_if_due(now);
        match self.shared.state.load(Ordering::Acquire) {
            READY => Ok(()),
            DRAINING => Err(Error::Draining),
            _ => Err(Error::STOPPED),
        }
    }

    /// Admission for authorizations (joins, bind, consume): refused with
    /// `ServiceUnavailable` whenever the store cannot guarantee them — it is
    /// stopped, or the expiry driver has not run for longer than
    /// `driver_stall_max` (so expiry, and with it the token's validity,
    /// cannot be guaranteed).
    pub(super) fn authorize(&self, now: MonoTime) -> Result<()> {
        self.finish_drain_if_due(now);
        if self.shared.state.load(Ordering::Acquire) == STOPPED {
            return Err(Error::STOPPED);
        }
        if self.driver_stalled(now) {
            return Err(Error::ServiceUnavailable {
                reason: Unavailable::DriverStalled,
            });
        }
        Ok(())
    }

    /// Whether the expiry driver has not swept for longer than
    /// `driver_stall_max`.
    fn driver_stalled(&self, now: MonoTime) -> bool {
        let lag = now.saturating_since(self.leases_swept_to());
        let stalled = lag > self.shared.config.driver_stall_max;
        if stalled {
            self.observe_stall(lag);
        }
        stalled
    }

    pub(super) fn is_stopped(&self) -> bool {
        self.shared.state.load(Ordering::Acquire) == STOPPED
    }

    /// Ends the drain if its deadline has passed. One caller wins.
    pub(super) fn finish_drain_if_due(&self, now: MonoTime) {
        if self.shared.state.load(Ordering::Acquire) != DRAINING
            || now.as_millis() < self.shared.drain_deadline_ms.load(Ordering::Acquire)
        {
            return;
        }
        if self
            .shared
            .state
            .compare_exchange(DRAINING, STOPPED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        // The drain's removals are mutations like any other: no commit
        // runs meanwhile.
        let _in = self.enter();
        let span = tracing::info_span!("relaystore_drain_end", tenants = tracing::field::Empty);
        let _entered = span.enter();
        let mut tenants = Vec::new();
        self.shared
            .tenants
            .for_each(|id, t| tenants.push((*id, t.clone())));
        span.record("tenants", tenants.len());
        // In tenant order, not hash order, so a drain is deterministic.
        tenants.sort_unstable_by_key(|(id, _)| *id);
        let mut leases = self.leases_by_tenant(None);
        for (tenant, t) in tenants {
            let its = leases.remove(&tenant).unwrap_or_default();
            self.end_tenant_records(tenant, &t.tenant, its, any, Cause::Drained, now);
        }
        self.shared.wakes.close();
        tracing::info!("relaystore drained and stopped");
    }

    /// An order-independent digest of every record held: collection, key,
    /// version and deadline. Equal digests mean equal stored state as far as
    /// versions can tell. For tests and diagnostics; costs a full scan.
    #[cfg(any(test, feature = "internals"))]
    pub fn digest(&self) -> u64 {
        use super::retire::digest_table;
        use super::{Attempt, Idem, Lease, Listing, Lock, Presence};
        self.digest_kind::<Lease>(1)
            .wrapping_add(self.digest_kind::<Listing>(2))
            .wrapping_add(self.digest_kind::<Presence>(3))
            .wrapping_add(self.digest_kind::<Attempt>(4))
            .wrapping_add(digest_table(&self.shared.tombstones, 5))
            .wrapping_add(self.digest_kind::<Idem>(6))
            .wrapping_add(self.digest_kind::<Lock>(7))
    }
}
