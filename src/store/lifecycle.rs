//! Lifecycle: health, drain, and the fail-closed admission checks.
//!
//! A store is `Ready`, then (after [`Store::begin_drain`]) `Draining` until
//! its drain deadline, then `Stopped`. The first call at or past the
//! deadline (a sweep, a health probe, an admission check) stops the store:
//! from then on every call that changes state is refused, and that call
//! does no more than flip the state. The revocations that end the drain
//! (every remaining lease and presence record, cause `Drained`) are the
//! sweeps' work: the expiry driver's, or the caller's own sweeps on a store
//! without one. One sweep at a time carries them out, `DRAIN_BATCH` leases
//! per entry into the commit gate, and then opens [`Store::drained`]. So
//! with the driver running a drain ends within its window plus one tick,
//! whatever callers do, and no caller waits on it.

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
/// Past the deadline: every change is refused, and a sweep revokes what
/// remains.
pub(super) const ENDING: u64 = 2;
/// Drained: nothing remains.
pub(super) const STOPPED: u64 = 3;

/// Leases the end of a drain revokes per entry into the commit gate (so a
/// commit waits for one batch at most), and presence records likewise.
const DRAIN_BATCH: usize = 256;

impl Store {
    /// The store's readiness. Also stops a store whose drain deadline
    /// passed (`Stopped` from then on, while the sweeps revoke what
    /// remains; [`drained`](Self::drained) says when they are done).
    pub fn health(&self) -> Health {
        let now = self.shared.clock.now();
        self.stop_if_due(now);
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
    /// `now + window` the store stops: every call that changes state is
    /// refused with `ServiceUnavailable`, and the next sweep (the expiry
    /// driver's, or one the caller runs on a store without a driver)
    /// revokes every remaining lease (and everything attached) and
    /// presence record with cause `Drained`; then
    /// [`drained`](Self::drained) resolves. Calling it again while
    /// draining keeps the earlier deadline. Returns the time left before
    /// the drain ends.
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
        self.stop_if_due(now);
        Ok(
            MonoTime::from_millis(self.shared.drain_deadline_ms.load(Ordering::Acquire))
                .saturating_since(now),
        )
    }

    /// Admission for new work (grants, publishes, joins, new presence and
    /// locks): `Draining` while draining, `ServiceUnavailable` once stopped.
    pub(super) fn admit_new(&self, now: MonoTime) -> Result<()> {
        self.stop_if_due(now);
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
        self.stop_if_due(now);
        if self.is_stopped() {
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

    /// Whether the store has stopped: past its drain deadline, whether or
    /// not the revocations that end the drain are done.
    pub(super) fn is_stopped(&self) -> bool {
        self.shared.state.load(Ordering::Acquire) >= ENDING
    }

    /// Resolves once the store has drained: its drain window passed and
    /// the sweep that ends it revoked every remaining record. Pending
    /// until then (also before any drain begins). With the builder's
    /// expiry driver that is within the window plus one tick; a store
    /// without a driver drains at the first sweep its owner runs after the
    /// window. Cancel-safe; any number of tasks may wait.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), relaystore::Error> {
    /// use std::time::Duration;
    /// let store = relaystore::Store::builder().expiry_tick(Duration::from_millis(5)).build()?;
    /// store.begin_drain(Duration::from_millis(20))?;
    /// store.drained().await;
    /// assert_eq!(store.health(), relaystore::Health::Stopped);
    /// # Ok(())
    /// # }
    /// ```
    pub fn drained(&self) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.shared.drained.wait()
    }

    /// [`drained`](Self::drained), blocking the calling thread for at most
    /// `timeout`; whether the store drained. Never call it on an async
    /// runtime's worker thread.
    #[cfg(feature = "native")]
    pub fn blocking_drained(&self, timeout: Duration) -> bool {
        self.shared.drained.blocking_wait(Some(timeout))
    }

    /// Stops the store if its drain deadline has passed: one atomic
    /// exchange, which one caller wins, and that caller closes the wake
    /// channels. The revocations are a sweep's.
    pub(super) fn stop_if_due(&self, now: MonoTime) {
        if self.shared.state.load(Ordering::Acquire) != DRAINING
            || now.as_millis() < self.shared.drain_deadline_ms.load(Ordering::Acquire)
        {
            return;
        }
        if self
            .shared
            .state
            .compare_exchange(DRAINING, ENDING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // Nothing more will come to a waiter: notifies are refused from
            // now on. One pass over the listeners, bounded by
            // `listeners_max`.
            self.shared.wakes.close();
            tracing::info!(
                "relaystore stopped: its drain window ended; the sweep revokes what remains"
            );
        }
    }

    /// A sweep's part in a drain: once the store has stopped, revokes every
    /// remaining lease (with everything attached) and presence record with
    /// cause `Drained`, in tenant order and `DRAIN_BATCH` records per entry
    /// into the commit gate, and opens
    /// [`drained`](Self::drained). Returns how many leases and presence
    /// records it removed. One sweep at a time does it; another finds the
    /// work taken and goes on with its own.
    pub(super) fn end_drain(&self, now: MonoTime) -> usize {
        self.stop_if_due(now);
        if self.shared.state.load(Ordering::Acquire) != ENDING
            || self
                .shared
                .ending
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return 0;
        }
        let span = tracing::info_span!(
            "relaystore_drain_end",
            tenants = tracing::field::Empty,
            removed = tracing::field::Empty
        );
        let _entered = span.enter();
        let mut tenants = Vec::new();
        self.shared
            .tenants
            .for_each(|id, t| tenants.push((*id, t.clone())));
        span.record("tenants", tenants.len());
        // In tenant order, not hash order, so a drain is deterministic.
        tenants.sort_unstable_by_key(|(id, _)| *id);
        let mut leases = self.leases_by_tenant(None);
        let mut removed = 0;
        for (tenant, t) in tenants {
            let its = leases.remove(&tenant).unwrap_or_default();
            for batch in its.chunks(DRAIN_BATCH) {
                // The drain's removals are mutations like any other: no
                // commit runs meanwhile.
                let _in = self.enter();
                removed += self.end_leases(tenant, batch, any, Cause::Drained, now);
            }
            let members = self.members_of(&t.tenant);
            for batch in members.chunks(DRAIN_BATCH) {
                let _in = self.enter();
                removed += self.end_members(tenant, batch, any, Cause::Drained, now);
            }
        }
        span.record("removed", removed);
        self.shared.state.store(STOPPED, Ordering::Release);
        // Every `Drained` event is in the subscribers' buffers: each
        // subscription ends once they are read.
        self.shared.events.close();
        self.shared.drained.open();
        tracing::info!(removed, "relaystore drained");
        removed
    }

    /// An order-independent digest of every record held: collection, key,
    /// version and deadline. Equal digests mean equal stored state as far as
    /// versions can tell. For tests and diagnostics; costs a full scan.
    #[cfg(any(test, feature = "internals"))]
    pub fn digest(&self) -> u64 {
        use super::protocol::retire::digest_table;
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
