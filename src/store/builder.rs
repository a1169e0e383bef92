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

#[cfg(feature = "native")]
use super::Shared;
use super::Store;
#[cfg(feature = "native")]
use crate::base::error::Unavailable;
use crate::base::error::{Error, Result};
use crate::base::time::Clock;
#[cfg(feature = "native")]
use crate::base::time::SystemClock;
use crate::contract::config::{QuotaPolicy, StoreConfig, UniformQuota};
use std::sync::Arc;
#[cfg(feature = "native")]
use std::sync::{Condvar, Mutex, Weak};
use std::time::Duration;

/// The default expiry driver tick.
pub const EXPIRY_TICK_DEFAULT: Duration = Duration::from_millis(10);

/// Builds a [`Store`]: default limits, the system clock, uniform tenant
/// quotas and a background expiry driver, each replaceable. Without the
/// `native` feature (the wasm32 build) there is no system clock and no
/// driver thread: the host passes its clock and calls [`Store::sweep`].
///
/// ```
/// # #[cfg(feature = "native")] {
/// use relaystore::{time::ManualClock, Store, StoreConfig};
/// use std::{sync::Arc, time::Duration};
///
/// // Production: system clock, a driver sweeping every 10 ms.
/// let store = Store::builder().build()?;
///
/// // Tests: a manual clock, and the test calls `sweep` itself.
/// let clock = Arc::new(ManualClock::new());
/// let test_store = Store::builder()
///     .config(StoreConfig::default().leases_max(1_000))
///     .clock(clock.clone())
///     .without_expiry_driver()
///     .build()?;
/// # }
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
    /// [`EXPIRY_TICK_DEFAULT`] (without the `native` feature: no clock,
    /// which the host must give, and no driver).
    pub fn builder() -> StoreBuilder {
        StoreBuilder {
            config: StoreConfig::default(),
            clock: None,
            policy: None,
            expiry_tick: cfg!(feature = "native").then_some(EXPIRY_TICK_DEFAULT),
        }
    }
}

impl StoreBuilder {
    /// Every limit of the store (validated by [`build`](Self::build)).
    pub fn config(mut self, config: StoreConfig) -> Self {
        self.config = config;
        self
    }

    /// The clock (default: `SystemClock`); tests pass a `ManualClock`.
    /// Without the `native` feature it is required: the host's.
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
    #[cfg(feature = "native")]
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
                    values: format!(
                        "expiry_tick = {tick:?}, driver_stall_max = {:?}",
                        self.config.driver_stall_max
                    ),
                });
            }
        }
        #[cfg(feature = "native")]
        let clock = self
            .clock
            .unwrap_or_else(|| Arc::new(SystemClock::new()) as Arc<dyn Clock>);
        #[cfg(not(feature = "native"))]
        let clock = self.clock.ok_or(Error::InvalidConfig {
            field: "clock",
            rule: "without the `native` feature the host supplies the clock",
            values: String::new(),
        })?;
        let policy = self
            .policy
            .unwrap_or_else(|| Arc::new(UniformQuota(self.config.tenant.clone())));
        let store = Store::with_policy(self.config, clock, policy)?;
        #[cfg(feature = "native")]
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
#[cfg(feature = "native")]
pub(crate) struct DriverStop(Arc<(Mutex<bool>, Condvar)>);

#[cfg(feature = "native")]
impl DriverStop {
    fn raise(&self) {
        let (stopped, wake) = &*self.0;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
    }
}

#[cfg(feature = "native")]
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
#[cfg(feature = "native")]
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

/// The build without `native` (the wasm32 one), run on the host: the host
/// gives the clock and drives the sweep.
#[cfg(all(test, not(feature = "native"), not(relaystore_loom)))]
mod without_native {
    use super::*;
    use crate::base::ids::TenantId;
    use crate::base::time::ManualClock;

    #[test]
    fn the_host_gives_the_clock_and_calls_sweep() {
        assert_eq!(
            Store::builder().build().err(),
            Some(Error::InvalidConfig {
                field: "clock",
                rule: "without the `native` feature the host supplies the clock",
                values: String::new(),
            })
        );
        let clock = Arc::new(ManualClock::new());
        let store = Store::builder().clock(clock.clone()).build().unwrap();
        let lease = store
            .grant(TenantId(1), "host", Duration::from_secs(1), None)
            .unwrap();
        clock.advance(Duration::from_secs(2));
        assert_eq!(store.sweep(), 1, "the host's sweep removes the lease");
        assert!(store.get_lease(TenantId(1), lease.id).is_err());
    }
}
