//! Time as an input: the [`Clock`] trait and its implementations (a
//! third, `CoarseClock`, in `coarse_clock.rs`).
//!
//! Every expiry decision in the store is made on a [`MonoTime`], a reading of
//! a monotonic clock in whole milliseconds since the clock's origin. The wall
//! clock is read only to report an absolute expiry to callers and never
//! decides anything, so a wall-clock jump in either direction changes no
//! outcome. This module and `coarse_clock.rs` are the only places in the
//! crate that read the OS clock.

#[cfg(feature = "native")]
use std::sync::atomic::AtomicI64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The latest deadline a record can have, in milliseconds of clock time
/// (2^40 - 1: about 34.8 years of uptime).
pub const DEADLINE_MAX_MS: u64 = (1 << 40) - 1;

/// A monotonic instant: whole milliseconds since the clock's origin.
///
/// Millisecond resolution is a deliberate choice (see
/// `docs/adr/0003-wheel-geometry.md`): relay TTLs are seconds to hours, and a
/// `u64` of milliseconds packs with a version into one atomic word.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MonoTime(u64);

impl MonoTime {
    /// The clock's origin.
    pub const ZERO: MonoTime = MonoTime(0);

    /// An instant `ms` milliseconds after the origin.
    pub const fn from_millis(ms: u64) -> Self {
        MonoTime(ms)
    }

    /// Milliseconds since the origin.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// `self + d`, rounding `d` up to whole milliseconds and saturating.
    pub fn saturating_add(self, d: Duration) -> Self {
        MonoTime(self.0.saturating_add(duration_to_millis_ceil(d)))
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: MonoTime) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

/// `d` in whole milliseconds, rounded up so that a deadline computed from it
/// is never earlier than asked for. Saturates at `u64::MAX`.
pub fn duration_to_millis_ceil(d: Duration) -> u64 {
    // Whole seconds are whole milliseconds, so only the sub-second part
    // rounds; done in u64 to stay off 128-bit division on the renew path.
    let sub_ms = u64::from(d.subsec_nanos().div_ceil(1_000_000));
    d.as_secs().saturating_mul(1000).saturating_add(sub_ms)
}

/// A source of time for the store.
///
/// Implementations must make [`Clock::now`] monotonic (never decreasing).
/// [`Clock::wall`] may jump in either direction; the store uses it only to
/// report wall-clock expiry times.
pub trait Clock: Send + Sync + 'static {
    /// The monotonic reading that drives every expiry decision.
    fn now(&self) -> MonoTime;
    /// The wall-clock reading, for reporting only.
    fn wall(&self) -> SystemTime;

    /// The wall-clock time at `now`, a monotonic reading this clock gave
    /// moments ago: what an operation that has read [`Clock::now`] reports
    /// as an absolute expiry. The default reads the wall clock; a clock
    /// that can answer from `now` alone spares the operation a second OS
    /// clock read ([`SystemClock`] does).
    fn wall_at(&self, now: MonoTime) -> SystemTime {
        let _ = now;
        self.wall()
    }
}

#[cfg(feature = "native")]
/// The production clock: the CPU's time-stamp counter for monotonic time,
/// `SystemTime` for wall.
///
/// A reading is one `rdtsc` scaled to nanoseconds (through `quanta`, which
/// calibrates the counter against the OS monotonic clock once per process
/// and falls back to that clock where the CPU has no invariant counter):
/// about 11 ns, where `Instant::now` through the vDSO takes about 32 ns
/// on the reference machine, a third of a renewal (ADR 0052). Readings
/// never go back, whatever the counters of two cores say: each is at
/// least the latest one this clock handed out ([`Clock::now`]'s contract).
///
/// [`Clock::wall_at`] answers from the monotonic reading and the wall time
/// at the clock's origin, which it re-reads from the OS at most once per
/// [`WALL_RECHECK_MS`] of monotonic time: a wall-clock step shows in the
/// expiries it reports within that long, and an operation reads the OS
/// clock once, not twice.
#[derive(Debug)]
pub struct SystemClock {
    source: quanta::Clock,
    origin: quanta::Instant,
    /// The latest reading handed out, in ms since `origin`. Written about
    /// once per millisecond (by the first reading of each), read by all.
    latest_ms: AtomicU64,
    /// The wall time at `origin`, in nanoseconds from the Unix epoch
    /// (negative before it), as last read.
    origin_wall_ns: AtomicI64,
    /// The monotonic reading, in ms, at which `origin_wall_ns` was read.
    checked_ms: AtomicU64,
}

/// How often, in milliseconds of monotonic time, [`SystemClock`] re-reads
/// the wall clock to answer [`Clock::wall_at`]: once a second.
#[cfg(feature = "native")]
pub const WALL_RECHECK_MS: u64 = 1000;

#[cfg(feature = "native")]
impl SystemClock {
    /// A clock whose origin is the moment of construction. The first one
    /// in a process calibrates the counter (typically 10-20 ms, at most
    /// 200 ms).
    pub fn new() -> Self {
        let source = quanta::Clock::new();
        let origin = source.now();
        let clock = SystemClock {
            source,
            origin,
            latest_ms: AtomicU64::new(0),
            origin_wall_ns: AtomicI64::new(0),
            checked_ms: AtomicU64::new(0),
        };
        clock.recheck_wall();
        clock
    }

    /// The time since the origin, as the counter gives it now.
    fn elapsed(&self) -> Duration {
        self.source.now().saturating_duration_since(self.origin)
    }

    /// Reads the wall clock and the monotonic one together and keeps the
    /// wall time at the origin that they give.
    fn recheck_wall(&self) {
        let wall = unix_nanos(SystemTime::now());
        let elapsed = self.elapsed();
        let since_origin = i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX);
        self.origin_wall_ns
            .store(wall.saturating_sub(since_origin), Ordering::Relaxed);
        self.checked_ms
            .store(whole_millis(elapsed), Ordering::Relaxed);
    }
}

/// `d` in whole milliseconds, rounded down and saturating, in 64-bit
/// arithmetic (`Duration::as_millis` is 128-bit).
#[cfg(feature = "native")]
fn whole_millis(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1000)
        .saturating_add(u64::from(d.subsec_millis()))
}

/// `reading`, or the latest reading handed out if that is later; a later
/// `reading` becomes the latest. Only the first reading of each new
/// millisecond writes `latest`, so the line is read by every caller and
/// written about once per millisecond.
#[cfg(feature = "native")]
fn never_back(latest: &AtomicU64, reading: u64) -> u64 {
    let last = latest.load(Ordering::Relaxed);
    if reading <= last {
        return last;
    }
    latest.fetch_max(reading, Ordering::Relaxed).max(reading)
}

/// `t` in nanoseconds from the Unix epoch, negative before it, saturating
/// (an `i64` of nanoseconds reaches the year 2262).
#[cfg(feature = "native")]
fn unix_nanos(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

#[cfg(feature = "native")]
impl Clone for SystemClock {
    fn clone(&self) -> Self {
        SystemClock {
            source: self.source.clone(),
            origin: self.origin,
            latest_ms: AtomicU64::new(self.latest_ms.load(Ordering::Relaxed)),
            origin_wall_ns: AtomicI64::new(self.origin_wall_ns.load(Ordering::Relaxed)),
            checked_ms: AtomicU64::new(self.checked_ms.load(Ordering::Relaxed)),
        }
    }
}

#[cfg(feature = "native")]
impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "native")]
impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> MonoTime {
        MonoTime(never_back(&self.latest_ms, whole_millis(self.elapsed())))
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }

    fn wall_at(&self, now: MonoTime) -> SystemTime {
        if now
            .0
            .saturating_sub(self.checked_ms.load(Ordering::Relaxed))
            >= WALL_RECHECK_MS
        {
            self.recheck_wall();
        }
        let origin = self.origin_wall_ns.load(Ordering::Relaxed);
        let at = if origin >= 0 {
            SystemTime::UNIX_EPOCH + Duration::from_nanos(origin.unsigned_abs())
        } else {
            SystemTime::UNIX_EPOCH - Duration::from_nanos(origin.unsigned_abs())
        };
        at + Duration::from_millis(now.0)
    }
}

/// A clock moved only by the test that owns it.
///
/// Monotonic time starts at zero and only moves forwards through
/// [`ManualClock::advance`]; wall time can be set or jumped either way.
///
/// ```
/// use relaystore::time::{Clock, ManualClock, MonoTime};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// clock.advance(Duration::from_millis(1500));
/// assert_eq!(clock.now(), MonoTime::from_millis(1500));
/// clock.jump_wall_backward(Duration::from_secs(3600)); // changes no expiry
/// assert_eq!(clock.now(), MonoTime::from_millis(1500));
/// ```
#[derive(Debug)]
pub struct ManualClock {
    mono_ms: AtomicU64,
    wall: Mutex<SystemTime>,
}

impl ManualClock {
    /// A clock at monotonic zero with wall time 2026-01-01T00:00:00Z.
    pub fn new() -> Self {
        ManualClock {
            mono_ms: AtomicU64::new(0),
            wall: Mutex::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)),
        }
    }

    /// Moves both monotonic and wall time forwards by `d` (rounded up to ms).
    pub fn advance(&self, d: Duration) {
        let ms = duration_to_millis_ceil(d);
        self.mono_ms.fetch_add(ms, Ordering::SeqCst);
        let mut wall = self.wall.lock().unwrap_or_else(|p| p.into_inner());
        *wall += Duration::from_millis(ms);
    }

    /// Sets monotonic time to `t`. Panics if `t` is earlier than now, because
    /// a monotonic clock never goes back.
    pub fn set(&self, t: MonoTime) {
        let previous = self.mono_ms.fetch_max(t.0, Ordering::SeqCst);
        assert!(previous <= t.0, "ManualClock cannot move backwards");
    }

    /// Jumps wall time forwards without moving monotonic time.
    pub fn jump_wall_forward(&self, d: Duration) {
        let mut wall = self.wall.lock().unwrap_or_else(|p| p.into_inner());
        *wall += d;
    }

    /// Jumps wall time backwards without moving monotonic time.
    pub fn jump_wall_backward(&self, d: Duration) {
        let mut wall = self.wall.lock().unwrap_or_else(|p| p.into_inner());
        *wall -= d;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> MonoTime {
        MonoTime(self.mono_ms.load(Ordering::SeqCst))
    }

    fn wall(&self) -> SystemTime {
        *self.wall.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<C: Clock> Clock for std::sync::Arc<C> {
    fn now(&self) -> MonoTime {
        (**self).now()
    }

    fn wall(&self) -> SystemTime {
        (**self).wall()
    }

    fn wall_at(&self, now: MonoTime) -> SystemTime {
        (**self).wall_at(now)
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    #[test]
    fn millis_round_up_and_saturate() {
        let reference =
            |d: Duration| u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX);
        let cases = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(999_999),
            Duration::from_millis(1),
            Duration::from_nanos(1_000_001),
            Duration::new(1, 999_999_999),
            Duration::new(600, 0),
            Duration::new(u64::MAX / 1000, 999_999_999),
            Duration::new(u64::MAX / 1000 + 1, 0),
            Duration::MAX,
        ];
        for d in cases {
            assert_eq!(duration_to_millis_ceil(d), reference(d), "{d:?}");
        }
        assert_eq!(duration_to_millis_ceil(Duration::from_nanos(1)), 1);
        assert_eq!(duration_to_millis_ceil(Duration::MAX), u64::MAX);
    }

    /// Whether `at` lies within `slack` of the OS wall-clock readings taken
    /// just before and just after it was computed.
    #[cfg(feature = "native")]
    fn between(before: SystemTime, at: SystemTime, after: SystemTime, slack: Duration) -> bool {
        before - slack <= at && at <= after + slack
    }

    /// A clock made `ago` before now, whose kept wall time at its origin is
    /// `origin_wall_ns` as read at monotonic `checked_ms`.
    #[cfg(feature = "native")]
    fn clock_made(ago: Duration, origin_wall_ns: i64, checked_ms: u64) -> SystemClock {
        let source = quanta::Clock::new();
        let origin = source.now().checked_sub(ago).expect("up for longer");
        SystemClock {
            source,
            origin,
            latest_ms: AtomicU64::new(0),
            origin_wall_ns: AtomicI64::new(origin_wall_ns),
            checked_ms: AtomicU64::new(checked_ms),
        }
    }

    #[cfg(feature = "native")]
    #[test]
    fn a_reading_never_goes_below_one_handed_out_before() {
        let latest = AtomicU64::new(0);
        assert_eq!(never_back(&latest, 10), 10);
        assert_eq!(latest.load(Ordering::Relaxed), 10);
        // A core whose counter lags: the reading before stands.
        assert_eq!(never_back(&latest, 9), 10);
        assert_eq!(latest.load(Ordering::Relaxed), 10);
        assert_eq!(never_back(&latest, 10), 10);
        assert_eq!(never_back(&latest, 11), 11);
        assert_eq!(latest.load(Ordering::Relaxed), 11);
    }

    #[cfg(feature = "native")]
    #[test]
    fn the_counter_keeps_the_os_monotonic_clocks_pace() {
        // Each interval of the clock is bracketed by two of the OS clock:
        // outer readings before the first and after the last, inner ones
        // after the first and before the last. Whole milliseconds round
        // each end by under 1 ms, and the counter's scale, calibrated once
        // against the OS clock while other tests load the machine, may be
        // off by a little: 1/32 of the interval (3 %) is allowed for it. A
        // clock in the wrong unit, or one that stands still, is far off.
        let clock = SystemClock::new();
        let outer_start = std::time::Instant::now();
        let start = clock.now();
        let inner_start = std::time::Instant::now();
        std::thread::sleep(Duration::from_millis(60));
        let inner_end = std::time::Instant::now();
        let end = clock.now();
        let outer_end = std::time::Instant::now();
        let passed = end.saturating_since(start);
        let (inner, outer) = (inner_end - inner_start, outer_end - outer_start);
        let slack = |d: Duration| Duration::from_millis(1) + d / 32;
        assert!(
            passed + slack(inner) >= inner,
            "{passed:?} on the clock, {inner:?} at least"
        );
        assert!(
            passed <= outer + slack(outer),
            "{passed:?} on the clock, {outer:?} at most"
        );
    }

    #[cfg(feature = "native")]
    #[test]
    fn wall_at_answers_the_wall_time_of_the_reading() {
        // A reading 2 s after the origin: the answer counts those 2 s.
        // Retried, as a preempted thread can fall between two readings.
        let slack = Duration::from_millis(5);
        let close = (0..5).any(|_| {
            let clock = SystemClock::new();
            let clock = clock_made(
                Duration::from_secs(2),
                clock.origin_wall_ns.load(Ordering::Relaxed) - 2_000_000_000,
                2_000,
            );
            let before = SystemTime::now();
            let at = clock.wall_at(clock.now());
            between(before, at, SystemTime::now(), slack)
        });
        assert!(close, "wall_at strays from the wall clock");
    }

    #[cfg(feature = "native")]
    #[test]
    fn wall_at_rereads_the_wall_clock_once_a_recheck_is_due() {
        // The kept origin is a day off, as after a step of the wall clock.
        let day = 86_400_000_000_000;
        let slack = Duration::from_millis(5);
        let stale = clock_made(
            Duration::from_secs(2),
            unix_nanos(SystemTime::now()) - day,
            0,
        );
        let before = SystemTime::now();
        let at = stale.wall_at(stale.now());
        assert!(between(before, at, SystemTime::now(), slack), "not re-read");
        // Until a recheck is due it answers from the kept origin, off by the
        // same day: no OS wall-clock read.
        let kept = clock_made(Duration::ZERO, unix_nanos(SystemTime::now()) - day, 0);
        let at = kept.wall_at(MonoTime::from_millis(WALL_RECHECK_MS - 1));
        let off = SystemTime::now().duration_since(at).expect("a day behind");
        assert!(
            off >= Duration::from_secs(86_399),
            "re-read too early: {off:?}"
        );
    }
}
