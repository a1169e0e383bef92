//! [`CoarseClock`]: a clock read from one word that a thread of its own
//! keeps current, for stores whose reads sit on a packet path (ADR 0079).

use super::time::{Clock, MonoTime, SystemClock};
use crossbeam_utils::CachePadded;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// The shortest tick a [`CoarseClock`] takes: the resolution of
/// [`MonoTime`].
pub const COARSE_TICK_MIN: Duration = Duration::from_millis(1);
/// The longest tick a [`CoarseClock`] takes.
pub const COARSE_TICK_MAX: Duration = Duration::from_millis(100);

/// A monotonic clock whose reading is one load of a word that a thread of
/// its own, `relaystore-clock`, sets from a [`SystemClock`] every `tick`.
///
/// Every store operation reads the clock once. A [`SystemClock`] reading
/// reads the CPU's time-stamp counter and scales it (about 10 ns, twice a
/// hash map's get on the reference machine); this one is a load of a
/// line written once per tick. What it costs: **a reading lags the time
/// by up to one tick plus the delay before the OS runs the ticking thread
/// again** (a few milliseconds on a loaded machine; unbounded if that
/// thread is starved). A record is then read as live, and renewed, for
/// that long past its deadline; no record expires early, and readings
/// never go back. The expiry driver reads the same clock, so its stall
/// check cannot see a stalled ticker: a store that must refuse an expired
/// token within a bound it states keeps [`SystemClock`] (the builder's
/// default).
///
/// The thread stops when the clock is dropped (the store's last handle
/// holds it).
///
/// ```
/// use relaystore::time::{Clock, CoarseClock};
/// use relaystore::Store;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let clock = Arc::new(CoarseClock::start(Duration::from_millis(1))?);
/// let store = Store::builder().clock(clock.clone()).build()?;
/// let before = clock.now();
/// std::thread::sleep(Duration::from_millis(20));
/// assert!(clock.now() > before);
/// # drop(store);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CoarseClock {
    shared: Arc<Ticked>,
    ticker: Option<JoinHandle<()>>,
}

/// What the clock and its thread share.
#[derive(Debug)]
struct Ticked {
    source: SystemClock,
    /// The latest reading of `source`, in ms.
    now_ms: CachePadded<AtomicU64>,
    stop: AtomicBool,
}

impl Ticked {
    fn tick(&self) {
        self.now_ms
            .fetch_max(self.source.now().as_millis(), Ordering::Release);
    }
}

impl CoarseClock {
    /// Starts the clock and its thread, which reads a [`SystemClock`]
    /// every `tick`. `tick` from [`COARSE_TICK_MIN`] to
    /// [`COARSE_TICK_MAX`], else [`io::ErrorKind::InvalidInput`]; an error
    /// too if the OS refuses to start a thread.
    pub fn start(tick: Duration) -> io::Result<Self> {
        if !(COARSE_TICK_MIN..=COARSE_TICK_MAX).contains(&tick) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a coarse clock's tick is from 1 ms to 100 ms",
            ));
        }
        let shared = Arc::new(Ticked {
            source: SystemClock::new(),
            now_ms: CachePadded::new(AtomicU64::new(0)),
            stop: AtomicBool::new(false),
        });
        shared.tick();
        let ticking = Arc::clone(&shared);
        let ticker = std::thread::Builder::new()
            .name("relaystore-clock".into())
            .spawn(move || {
                while !ticking.stop.load(Ordering::Acquire) {
                    std::thread::park_timeout(tick);
                    ticking.tick();
                }
            })?;
        Ok(CoarseClock {
            shared,
            ticker: Some(ticker),
        })
    }
}

impl Clock for CoarseClock {
    #[inline]
    fn now(&self) -> MonoTime {
        MonoTime::from_millis(self.shared.now_ms.load(Ordering::Acquire))
    }

    fn wall(&self) -> SystemTime {
        self.shared.source.wall()
    }

    fn wall_at(&self, now: MonoTime) -> SystemTime {
        self.shared.source.wall_at(now)
    }
}

impl Drop for CoarseClock {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(ticker) = self.ticker.take() {
            ticker.thread().unpark();
            // The thread only loads, stores and parks: it cannot panic.
            let _ = ticker.join();
        }
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_tick_outside_its_range_is_refused() {
        for tick in [
            Duration::ZERO,
            Duration::from_micros(999),
            COARSE_TICK_MAX + Duration::from_nanos(1),
        ] {
            let refused = CoarseClock::start(tick).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::InvalidInput, "{tick:?}");
        }
        assert!(CoarseClock::start(COARSE_TICK_MIN).is_ok());
        assert!(CoarseClock::start(COARSE_TICK_MAX).is_ok());
    }

    #[test]
    fn readings_follow_the_system_clock_never_ahead_and_never_back() {
        let clock = CoarseClock::start(Duration::from_millis(1)).unwrap();
        let first = clock.now();
        std::thread::sleep(Duration::from_millis(50));
        // The ticker catches up with the 50 ms slept (a loaded machine may
        // run it late, hence a wait rather than a bound on the time).
        let waited = Instant::now();
        let mut last = first;
        while last.as_millis() < first.as_millis() + 50 {
            assert!(
                waited.elapsed() < Duration::from_secs(10),
                "the clock stayed at {last:?}"
            );
            std::thread::sleep(Duration::from_millis(1));
            let now = clock.now();
            assert!(now >= last, "a reading went back: {now:?} after {last:?}");
            assert!(now <= clock.shared.source.now(), "a reading ran ahead");
            last = now;
        }
    }

    #[test]
    fn dropping_the_clock_stops_its_thread() {
        let clock = CoarseClock::start(COARSE_TICK_MAX).unwrap();
        let shared = Arc::clone(&clock.shared);
        drop(clock);
        // The drop joined the thread, which held the other handle.
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
