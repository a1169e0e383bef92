//! The background expiry driver.
//!
//! In production a thread calls [`Sweep::sweep_expired`] once per tick so expired
//! records are reclaimed within a tick of their deadline; tests call `sweep`
//! themselves on a `ManualClock`. Each sweep records the time it ran, so a
//! stalled driver shows up as a growing [`TtlMap::sweep_lag`](crate::TtlMap::sweep_lag).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Something an [`ExpiryDriver`] can sweep.
pub trait Sweep: Send + Sync + 'static {
    /// Physically removes what has expired by the target's own clock and
    /// returns how many records it removed.
    fn sweep_expired(&self) -> usize;
}

impl<K, V> Sweep for crate::mem::ttl::TtlMap<K, V>
where
    K: Eq + std::hash::Hash + Ord + Clone + Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    fn sweep_expired(&self) -> usize {
        self.sweep().len()
    }
}

/// A thread that sweeps a target once per tick until stopped or dropped.
///
/// ```
/// use relaystore::{time::SystemClock, ExpiryDriver, TtlConfig, TtlMap};
/// use std::{sync::Arc, time::Duration};
///
/// let map = Arc::new(TtlMap::<u64, ()>::new(TtlConfig::default(), Arc::new(SystemClock::new()))?);
/// let driver = ExpiryDriver::spawn(map.clone(), Duration::from_millis(10))?;
/// // ... use `map` on the hot path ...
/// driver.stop(); // also happens on drop
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ExpiryDriver {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl ExpiryDriver {
    /// Starts a thread named `relaystore-expiry` that sweeps `target` every
    /// `tick`. Fails only if the OS refuses to start a thread.
    pub fn spawn(target: Arc<dyn Sweep>, tick: Duration) -> std::io::Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("relaystore-expiry".into())
            .spawn(move || {
                let (stopped, wake) = &*signal;
                let mut stopped_guard = stopped.lock().unwrap_or_else(|p| p.into_inner());
                while !*stopped_guard {
                    drop(stopped_guard);
                    target.sweep_expired();
                    stopped_guard = stopped.lock().unwrap_or_else(|p| p.into_inner());
                    if *stopped_guard {
                        break;
                    }
                    stopped_guard = wake
                        .wait_timeout(stopped_guard, tick)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            })?;
        Ok(ExpiryDriver {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the thread and waits for its current sweep to finish.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A panic in the driver thread has already been reported by the
            // panic hook; there is nothing more to do with it here.
            let _ = thread.join();
        }
    }
}

impl Drop for ExpiryDriver {
    fn drop(&mut self) {
        self.shutdown();
    }
}
