//! [`StoreBuilder`]: how a store is put together, and the expiry driver a
//! built store runs by default.
//!
//! A store whose sweep never runs starts refusing joins once
//! `driver_stall_max` passes (fail closed), so the builder starts a
//! background driver unless told not to: tests drive the sweep by hand on
//! a `ManualClock`, and a host may drive it from its own loop.
//!
//! The driver thread holds only a weak reference between ticks, so it
//! never keeps a store alive: when the last handle goes, the store raises
//! the driver's stop signal and the thread ends at its next wake-up.

use super::{Shared, Store};
use crate::config::{QuotaPolicy, StoreConfig, UniformQuota};
use crate::error::{Error, Result, Unavailable};
use crate::time::{Clock, SystemClock};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

/// The default expiry driver tick.
pub const EXPIRY_TICK_DEFAULT: Duration = Duration::from_millis(10);

/// Builds a [`Store`]: default limits, the system clock, uniform tenant
/// quotas and a background expiry driver, each replaceable.
///
/// ```
/// use relaystore::{time::ManualClock, Store, StoreConfig};
/// use std::{sync::Arc, time::Duration};
///
/// // Production: system clock, a driver sweeping every 10 ms.
/// let store = Store::builder().build()?;
///
/// // Tests: a manual clock, and the test calls `sweep` itself.
/// let clock = Arc::new(ManualClock::new());
/// let test_store = Store::builder()
///     .config(StoreConfig { leases_max: 1_000, ..StoreConfig::default() })
///     .clock(clock.clone())
///     .without_expiry_driver()
///     .build()?;
/// # Ok::<(), relaystore::Error>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct StoreBuilder {
    config: StoreConfig,
    clock: Option<Arc<dyn Clock>>,
    policy: Option<Arc<dyn QuotaPolicy>>,
    /// `None`: no driver.
    expiry_tick: Option<Duration>,
}

impl std::fmt::Debug for StoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreBuilder")
            .field("config", &self.config)
            .field("expiry_tick", &self.expiry_tick)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// A [`StoreBuilder`] with the default limits, the system clock,
    /// uniform tenant quotas and a background expiry driver ticking every
    /// [`EXPIRY_TICK_DEFAULT`].
    pub fn builder() -> StoreBuilder {
        StoreBuilder {
            config: StoreConfig::default(),
            clock: None,
            policy: None,
            expiry_tick: Some(EXPIRY_TICK_DEFAULT),
        }
    }
}

impl StoreBuilder {
    /// Every limit of the store (validated by [`build`](Self::build)).
    pub fn config(mut self, config: StoreConfig) -> Self {
        self.config = config;
        self
    }

    /// The clock (default: [`SystemClock`]); tests pass a `ManualClock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Where each tenant's quotas come from (default: `config.tenant` for
    /// every tenant).
    pub fn quota_policy(mut self, policy: Arc<dyn QuotaPolicy>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// How often the background driver sweeps. Must be positive and
    /// shorter than `driver_stall_max`, or `build` refuses with
    /// `InvalidConfig { field: "expiry_tick", .. }`.
    pub fn expiry_tick(mut self, tick: Duration) -> Self {
        self.expiry_tick = Some(tick);
        self
    }

    /// No background driver: the host calls [`Store::sweep`] itself (tests
    /// on a `ManualClock` do). Without sweeps, joins, binds and consumes
    /// are refused once `driver_stall_max` passes.
    pub fn without_expiry_driver(mut self) -> Self {
        self.expiry_tick = None;
        self
    }

    /// Validates everything and builds the store, starting its driver.
    /// Fails with `InvalidConfig` naming the offending field, or with
    /// `ServiceUnavailable` if the OS refuses a thread or random bytes.
    pub fn build(self) -> Result<Store> {
        if let Some(tick) = self.expiry_tick {
            if tick.is_zero() || tick >= self.config.driver_stall_max {
                return Err(Error::InvalidConfig {
                    field: "expiry_tick",
                    rule: "must be positive and shorter than driver_stall_max",
                });
            }
        }
        let clock = self
            .clock
            .unwrap_or_else(|| Arc::new(SystemClock::new()) as Arc<dyn Clock>);
        let policy = self
            .policy
            .unwrap_or_else(|| Arc::new(UniformQuota(self.config.tenant.clone())));
        let store = Store::with_policy(self.config, clock, policy)?;
        if let Some(tick) = self.expiry_tick {
            let stop = spawn_driver(Arc::downgrade(&store.shared), tick).map_err(|_| {
                Error::ServiceUnavailable {
                    reason: Unavailable::DriverNotStarted,
                }
            })?;
            *store
                .shared
                .driver
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(stop);
        }
        Ok(store)
    }
}

/// The stop signal of a builder-started driver thread.
pub(crate) struct DriverStop(Arc<(Mutex<bool>, Condvar)>);

impl DriverStop {
    fn raise(&self) {
        let (stopped, wake) = &*self.0;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
    }
}

impl DriverStop {
    /// Tells the driver the store is gone (from `Shared`'s drop, possibly
    /// in the driver thread itself at the end of a sweep): never waits.
    pub(super) fn stop(stop: &std::sync::Mutex<Option<DriverStop>>) {
        let taken = stop.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(stop) = taken {
            stop.raise();
        }
    }
}

/// Starts a thread that sweeps the store behind `target` every `tick`
/// until the store is gone or its stop signal is raised.
fn spawn_driver(target: Weak<Shared>, tick: Duration) -> std::io::Result<DriverStop> {
    let signal = Arc::new((Mutex::new(false), Condvar::new()));
    let theirs = Arc::clone(&signal);
    std::thread::Builder::new()
        .name("relaystore-expiry".into())
        .spawn(move || {
            let (stopped, wake) = &*theirs;
            loop {
                match target.upgrade() {
                    Some(shared) => {
                        Store { shared }.sweep();
                    }
                    None => return,
                }
                let guard = stopped.lock().unwrap_or_else(|p| p.into_inner());
                if *guard {
                    return;
                }
                let (guard, _) = wake
                    .wait_timeout(guard, tick)
                    .unwrap_or_else(|p| p.into_inner());
                if *guard {
                    return;
                }
            }
        })?;
    Ok(DriverStop(signal))
}
