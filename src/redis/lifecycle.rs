//! This handle's lifecycle: ready, draining, stopped.
//!
//! The state lives in Redis and is shared by every relay instance, so a
//! drain is the instance's own, not the store's: it stops this handle from
//! taking new work, lets the work it has finish, and then stops the
//! handle. Nothing is revoked when the window ends: the leases and tokens
//! this instance handed out stay valid on every other instance, which is
//! what lets a relay's clients move to another instance while this one
//! shuts down. (The in-memory store, whose state dies with the process,
//! revokes what remains instead.)

use super::{Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::contract::lifecycle::Health;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Not draining: the drain deadline's value until `begin_drain`.
const READY: u64 = u64::MAX;

/// When this handle's drain ends, in milliseconds since it connected
/// (`READY` until a drain begins). Set once; a later `begin_drain` keeps it.
pub(super) struct Drain {
    opened: Instant,
    deadline_ms: AtomicU64,
    /// Told when the drain begins, for the waits on its end.
    began: tokio::sync::Notify,
}

/// Where the handle is in its lifecycle at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Ready,
    Draining(Duration),
    Stopped,
}

impl Drain {
    pub(super) fn new() -> Self {
        Drain {
            opened: Instant::now(),
            deadline_ms: AtomicU64::new(READY),
            began: tokio::sync::Notify::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
    }

    pub(super) fn phase(&self) -> Phase {
        let deadline = self.deadline_ms.load(Ordering::Acquire);
        if deadline == READY {
            return Phase::Ready;
        }
        match deadline.checked_sub(self.now_ms()) {
            Some(left) if left > 0 => Phase::Draining(Duration::from_millis(left)),
            _ => Phase::Stopped,
        }
    }

    /// Starts the drain unless one has begun (the earlier deadline
    /// stays). Returns whether this call began it, and the phase after.
    fn begin(&self, window: Duration) -> (bool, Phase) {
        let window_ms = crate::base::time::duration_to_millis_ceil(window);
        let deadline = self.now_ms().saturating_add(window_ms).min(READY - 1);
        // Losing this race means another caller began the drain first.
        let began = self
            .deadline_ms
            .compare_exchange(READY, deadline, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if began {
            self.began.notify_waiters();
        }
        (began, self.phase())
    }
}

impl RedisEngine {
    /// Starts draining this handle: from now on it refuses new grants,
    /// publishes, joins, presence records and locks with
    /// [`Error::Draining`], while renewals, reads, releases, binds and
    /// consumes keep working. When `window` has passed the handle stops:
    /// every call is refused with `ServiceUnavailable` and
    /// [`health`](Self::health) is `Stopped`. Nothing is revoked: the
    /// state is shared, and other instances go on serving it, which lets
    /// this instance's clients move to another one (the in-memory store,
    /// whose state dies with the process, revokes what remains instead).
    /// Calling it again keeps the first deadline. Returns the time left
    /// before the handle stops.
    ///
    /// A `window` longer than `drain_window_max` is
    /// [`Error::InvalidArgument`] and changes nothing.
    pub async fn begin_drain(&self, window: Duration) -> Result<Duration> {
        self.config().check_drain_window(window)?;
        if self.inner.drain.phase() == Phase::Stopped {
            return Err(Error::STOPPED);
        }
        let (began, phase) = self.inner.drain.begin(window);
        if began {
            tracing::info!(
                window_ms = window.as_millis() as u64,
                "relaystore redis handle draining: new work is refused; the handle stops when the window ends",
            );
            self.close_listeners_at_stop();
        }
        match phase {
            Phase::Draining(left) => Ok(left),
            Phase::Ready | Phase::Stopped => Ok(Duration::ZERO),
        }
    }

    /// Resolves once this handle has stopped: its drain window passed.
    /// Pending until then, also before any drain begins. Nothing is
    /// revoked (see [`begin_drain`](Self::begin_drain)). Cancel-safe.
    pub async fn drained(&self) {
        loop {
            // Made before the look, so a drain that begins in between
            // still wakes it.
            let began = self.inner.drain.began.notified();
            match self.inner.drain.phase() {
                Phase::Stopped => {
                    // The task that closes them may not have run yet.
                    self.inner.wakes.close();
                    self.inner.hub.close();
                    return;
                }
                Phase::Draining(left) => tokio::time::sleep(left).await,
                Phase::Ready => began.await,
            }
        }
    }

    /// Closes this handle's wake listeners and event subscriptions when
    /// its drain window ends: each receives what is queued, then `Closed`,
    /// since notifies are refused and no event is delivered from then on.
    /// The task holds the handle weakly, so a handle dropped first ends it
    /// (and its drop closes them).
    fn close_listeners_at_stop(&self) {
        let inner = std::sync::Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                let Some(phase) = inner.upgrade().map(|i| i.drain.phase()) else {
                    return;
                };
                match phase {
                    Phase::Draining(left) => tokio::time::sleep(left).await,
                    Phase::Stopped => break,
                    // Not reached: a drain, once begun, never ends.
                    Phase::Ready => return,
                }
            }
            if let Some(inner) = inner.upgrade() {
                inner.wakes.close();
                inner.hub.close();
            }
        });
    }

    /// Whether this handle takes a call of `mode` now: a stopped handle
    /// takes none, a draining one no creations.
    pub(super) fn admit(&self, mode: Mode) -> Result<()> {
        match (self.inner.drain.phase(), mode) {
            (Phase::Ready, _) => Ok(()),
            (Phase::Stopped, _) => Err(Error::STOPPED),
            (Phase::Draining(_), Mode::Creating) => Err(Error::Draining),
            (Phase::Draining(_), Mode::Existing | Mode::Upserting) => Ok(()),
        }
    }

    /// Whether new records are refused now (the handle is draining): for
    /// the functions that create a record only if it is missing.
    pub(super) fn refusing_new(&self) -> bool {
        matches!(self.inner.drain.phase(), Phase::Draining(_))
    }

    /// This handle's lifecycle as readiness, when it is not ready.
    pub(super) fn lifecycle_health(&self) -> Option<Health> {
        match self.inner.drain.phase() {
            Phase::Ready => None,
            Phase::Draining(remaining) => Some(Health::Draining { remaining }),
            Phase::Stopped => Some(Health::Stopped),
        }
    }
}
