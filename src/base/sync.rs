//! The one place that chooses between `std` and loom primitives.
//!
//! Every atomic and lock the store's concurrent code uses comes from here. A model-checking build (`RUSTFLAGS="--cfg relaystore_loom"`) swaps in
//! loom's versions so the models in `loom-tests/` explore the real transition
//! code. The cfg is named after the crate because some dependencies react to a
//! bare `loom` cfg.
//!
//! Locks are taken through [`lock()`], [`read()`] and [`write()`], which
//! ignore poisoning (a slab slot's word, `base::slot_word`, has no
//! poisoning to ignore): the store never panics while holding a lock
//! except on a broken internal invariant, and a relay is better served by
//! continuing with the data it has than by turning one panic into a panic
//! on every later call.

#[cfg(not(relaystore_loom))]
pub(crate) use std::sync::{
    atomic::{fence, AtomicBool, AtomicI64, AtomicU64, Ordering},
    Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

#[cfg(relaystore_loom)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicBool, AtomicI64, AtomicU64, Ordering},
    Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

/// Whether this is the model-checking build. The few sizes that shrink
/// there, so that the models stay small, ask this constant (through
/// [`sized`]) instead of carrying a cfg of their own; the ordinary build
/// compiles the other branch away.
pub(crate) const MODEL: bool = cfg!(relaystore_loom);

/// `plain` in the ordinary build, `model` in the model-checking build.
pub(crate) const fn sized(plain: usize, model: usize) -> usize {
    if MODEL {
        model
    } else {
        plain
    }
}

/// A per-thread cell: std's `thread_local!` with a `const` initializer, or
/// under loom its own (loom runs every modelled thread on one OS thread,
/// so each modelled thread needs a cell of its own). Algorithm code
/// declares its thread-locals through this and carries no cfg.
macro_rules! thread_cell {
    ($(#[$meta:meta])* static $name:ident: $ty:ty = $init:expr;) => {
        #[cfg(not(relaystore_loom))]
        std::thread_local! {
            $(#[$meta])* static $name: $ty = const { $init };
        }
        #[cfg(relaystore_loom)]
        loom::thread_local! {
            $(#[$meta])* static $name: $ty = $init;
        }
    };
}
pub(crate) use thread_cell;

/// This thread's slot among `slots`, handed out round-robin on its first
/// call (callers pass one `slots` for the life of the process). Under
/// loom, per modelled thread, with the count starting again in each
/// explored execution, so every execution hands out the same slots.
pub(crate) fn thread_slot(slots: usize) -> usize {
    #[cfg(not(relaystore_loom))]
    static THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    #[cfg(relaystore_loom)]
    loom::lazy_static! {
        static ref THREADS: loom::sync::atomic::AtomicUsize = loom::sync::atomic::AtomicUsize::new(0);
    }
    thread_cell! {
        static SLOT: std::cell::Cell<usize> = std::cell::Cell::new(usize::MAX);
    }
    SLOT.with(|s| {
        if s.get() == usize::MAX {
            s.set(THREADS.fetch_add(1, Ordering::Relaxed) % slots);
        }
        s.get()
    })
}

/// The sequentially consistent fence only the model checker needs: loom
/// models sequentially consistent accesses as acquire/release only, so a
/// protocol that relies on their single total order (the commit gate's
/// enter) adds this fence where the checker must see that order. Nothing
/// in the ordinary build, whose `SeqCst` accesses already give it.
#[inline(always)]
pub(crate) fn model_seq_cst_fence() {
    #[cfg(relaystore_loom)]
    fence(Ordering::SeqCst);
}

/// `Arc` is always std's: the store shares immutable data through it
/// (`Arc<str>` keys, `Arc<dyn Clock>`, per-tenant state) and relies on
/// unsized coercion and `From<&str>`, which loom's `Arc` lacks. Reference
/// counts are not what the models check; the atomics and locks are.
pub(crate) use std::sync::Arc;

/// Locks `mutex`, recovering the guard if a previous holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Read-locks `lock`, recovering the guard if a previous holder panicked.
// Only the loom build reads through a std-shaped `RwLock` (its stand-in
// map).
#[allow(dead_code)]
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Write-locks `lock`, recovering the guard if a previous holder panicked.
// Only the loom build writes through a std-shaped `RwLock`.
#[allow(dead_code)]
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A rung of the one lock hierarchy (`docs/ARCHITECTURE.md`). A thread may
/// take a lock only on a rung strictly below (numerically above) every lock
/// it already holds; so two shard locks are never held at once (no nested
/// map calls) and no cycle can form.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rung {
    /// The commit gate's commit lock (held through a commit's changes).
    Gate = 1,
    /// A tenant's index.
    TenantIndex = 2,
    /// One schedule (held while its fire is enqueued).
    Schedule = 3,
    /// A timing wheel (a table's, or the streams' or queues' own).
    Wheel = 4,
    /// A name index's shard (a named slab table's writers, ADR 0078).
    Names = 5,
    /// A shard of any concurrent map (tables and the tenant registry), or
    /// a slab slot.
    Shard = 6,
    /// The event hub's subscriber list.
    Hub = 7,
    /// One subscriber's inbox.
    Inbox = 8,
    /// One wake listener's slot.
    Listener = 9,
    /// One stream's log.
    Stream = 10,
    /// One job queue's state.
    Queue = 11,
    /// A slab's free list (a leaf: taken with no slot lock held).
    SlabFree = 12,
    /// A word snapshot's writers' turn (a leaf: held while one writer
    /// stores the words).
    SnapshotWriter = 13,
    /// A one-shot latch's state (a leaf: its open flag and its waiters'
    /// wakers).
    Latch = 14,
    /// A tenant's per-holder counts (a leaf: a holder's leases or
    /// listings counted or given back).
    Holders = 15,
}

/// Lets another thread run while this one waits for a short-lived state
/// to pass (the commit gate's wait for mutations to leave).
pub(crate) fn spin_wait() {
    #[cfg(relaystore_loom)]
    loom::thread::yield_now();
    #[cfg(not(relaystore_loom))]
    std::hint::spin_loop();
    #[cfg(all(not(relaystore_loom), feature = "native"))]
    std::thread::yield_now();
}

/// Proof that the current thread entered `rung`; leaving restores what it
/// held before. Debug builds check the hierarchy on entry; release builds
/// (and the loom build, whose threads share one OS thread) carry nothing.
#[must_use]
pub(crate) struct Entered {
    #[cfg(all(debug_assertions, not(relaystore_loom)))]
    before: u8,
}

#[cfg(all(debug_assertions, not(relaystore_loom)))]
std::thread_local! {
    static HELD: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// Enters `rung`, panicking in a debug build if the thread holds a lock on
/// the same or a lower rung (a break of the hierarchy).
#[inline]
pub(crate) fn enter(rung: Rung) -> Entered {
    #[cfg(all(debug_assertions, not(relaystore_loom)))]
    {
        let before = HELD.with(|h| h.get());
        assert!(
            before < rung as u8,
            "lock hierarchy broken: taking {rung:?} while holding rung {before}"
        );
        HELD.with(|h| h.set(rung as u8));
        Entered { before }
    }
    #[cfg(not(all(debug_assertions, not(relaystore_loom))))]
    {
        let _ = rung;
        Entered {}
    }
}

#[cfg(all(debug_assertions, not(relaystore_loom)))]
impl Drop for Entered {
    fn drop(&mut self) {
        HELD.with(|h| h.set(self.before));
    }
}

/// A mutex guard that also holds its [`Rung`].
pub(crate) struct Ranked<'a, T> {
    // Declared first, so dropped first: the lock is released before the
    // rung is left.
    guard: MutexGuard<'a, T>,
    _rung: Entered,
}

impl<T> std::ops::Deref for Ranked<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> std::ops::DerefMut for Ranked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<'a, T> Ranked<'a, T> {
    /// Waits on `condvar` (which gives the lock up while waiting) for at
    /// most `timeout` (`None`: without limit). The rung stays entered: the
    /// waiting thread takes no other lock meanwhile.
    #[cfg(feature = "native")]
    pub(crate) fn wait(self, condvar: &Condvar, timeout: Option<std::time::Duration>) -> Self {
        let Ranked { guard, _rung } = self;
        let guard = match timeout {
            None => condvar.wait(guard).unwrap_or_else(|p| p.into_inner()),
            Some(t) => {
                condvar
                    .wait_timeout(guard, t)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
        };
        Ranked { guard, _rung }
    }

    /// Waits on `condvar` until `ready` takes something from the guarded
    /// state, for at most `timeout` (`None`: without limit); `None` if the
    /// time ran out. `sleepers` is the state's count of waiting threads,
    /// kept so that a signaller can skip the system call when nobody waits
    /// (or when each waiting thread already has a signal on its way).
    /// The one waiting loop of the blocking receivers.
    #[cfg(feature = "native")]
    pub(crate) fn wait_for<R>(
        mut self,
        condvar: &Condvar,
        timeout: Option<std::time::Duration>,
        sleepers: fn(&mut T) -> &mut Sleepers,
        mut ready: impl FnMut(&mut T) -> Option<R>,
    ) -> Option<R> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            if let Some(taken) = ready(&mut self) {
                return Some(taken);
            }
            let left = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(std::time::Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return None,
                },
            };
            sleepers(&mut self).waiting += 1;
            self = self.wait(condvar, left);
            sleepers(&mut self).woke();
        }
    }
}

/// The threads blocked on one guarded state's condition variable: how many
/// wait, and how many of them a signal is already on its way to (at most
/// as many). Kept under the state's lock.
#[derive(Default, Debug)]
pub(crate) struct Sleepers {
    waiting: usize,
    signalled: usize,
}

impl Sleepers {
    /// Whether any thread waits.
    pub(crate) fn any(&self) -> bool {
        self.waiting > 0
    }

    /// Whether a delivery must signal one thread: one waits that no signal
    /// is on its way to. Counts the signal it answers yes for, so the
    /// deliveries that follow before that thread wakes make no system
    /// call: the woken thread takes everything delivered meanwhile.
    pub(crate) fn signal_one(&mut self) -> bool {
        let needed = self.waiting > self.signalled;
        if needed {
            self.signalled += 1;
        }
        needed
    }

    /// A waiting thread woke (signalled, timed out, or spuriously) and
    /// holds the lock again. It settles one signal: a signal meant for
    /// another thread that it settles instead only makes a later delivery
    /// signal again, never skip one it needed.
    #[cfg(feature = "native")]
    fn woke(&mut self) {
        self.waiting -= 1;
        // Broken twin: a signal is never settled, so once a thread has
        // been signalled, the next delivery to it makes no signal.
        if !crate::base::faults::active(crate::base::faults::StoreFault::SignalsNeverSettled) {
            self.signalled = self.signalled.saturating_sub(1).min(self.waiting);
        }
    }
}

/// [`lock`], on `rung` of the hierarchy.
pub(crate) fn lock_at<T>(rung: Rung, mutex: &Mutex<T>) -> Ranked<'_, T> {
    let entered = enter(rung);
    Ranked {
        guard: lock(mutex),
        _rung: entered,
    }
}

/// A mutex that a holder working in a loop (a sweep, batch after batch)
/// gives way on: the others take it through [`lock`](Self::lock), which
/// counts one that has to wait; the looping holder takes it through
/// [`hold`](Self::hold), looks whether anyone waits
/// ([`awaited`](Self::awaited)) and, having let it go, lets those waiting
/// at that moment take it first ([`give_way`](Self::give_way)). A thread
/// that gives a mutex back and takes it again at once keeps it in
/// practice (a waiter the unlock wakes is not yet running), so without
/// this the loop's holds, however short, add up to one wait.
///
/// The counts are hints that nothing decides by: the model-checking build
/// keeps none (its models explore every gap between holds as it is), and
/// a build without OS threads gives no way.
pub(crate) struct GivesWay<T> {
    mutex: Mutex<T>,
    /// Threads waiting in `lock`.
    #[cfg(not(relaystore_loom))]
    waiting: std::sync::atomic::AtomicUsize,
    /// Threads that took the mutex in `lock` after waiting for it: when
    /// it has passed a count taken with `waiting`, those have had it.
    #[cfg(not(relaystore_loom))]
    let_in: std::sync::atomic::AtomicUsize,
}

/// The longest [`GivesWay::give_way`] waits for the waiters to take the
/// mutex, spinning: a waiter runs on another core, and a thread that
/// yields its core to a busy one loses it for a time slice (a sweep that
/// did tripled the capacity run's expiry-lag p99).
#[cfg(all(not(relaystore_loom), feature = "native"))]
const GIVE_WAY_MAX: std::time::Duration = std::time::Duration::from_micros(50);

#[cfg(all(test, not(relaystore_loom), feature = "native"))]
std::thread_local! {
    /// A test's bound for [`GivesWay::give_way`] on this thread, in place
    /// of [`GIVE_WAY_MAX`]: a test that asserts who takes the mutex next
    /// waits as long as it takes, however busy the machine.
    pub(crate) static GIVE_WAY_BOUND: std::cell::Cell<Option<std::time::Duration>> =
        const { std::cell::Cell::new(None) };
}

/// How long [`GivesWay::give_way`] waits at most on this thread.
#[cfg(all(not(relaystore_loom), feature = "native"))]
fn give_way_max() -> std::time::Duration {
    #[cfg(test)]
    if let Some(bound) = GIVE_WAY_BOUND.with(std::cell::Cell::get) {
        return bound;
    }
    GIVE_WAY_MAX
}

impl<T> GivesWay<T> {
    pub(crate) fn new(value: T) -> Self {
        GivesWay {
            mutex: Mutex::new(value),
            #[cfg(not(relaystore_loom))]
            waiting: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(not(relaystore_loom))]
            let_in: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// [`lock_at`], counted among the waiters while it waits.
    pub(crate) fn lock(&self, rung: Rung) -> Ranked<'_, T> {
        #[cfg(not(relaystore_loom))]
        {
            use std::sync::atomic::Ordering::Relaxed;
            let entered = enter(rung);
            let guard = match self.mutex.try_lock() {
                Ok(guard) => guard,
                Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {
                    self.waiting.fetch_add(1, Relaxed);
                    let guard = lock(&self.mutex);
                    self.let_in.fetch_add(1, Relaxed);
                    self.waiting.fetch_sub(1, Relaxed);
                    guard
                }
            };
            Ranked {
                guard,
                _rung: entered,
            }
        }
        #[cfg(relaystore_loom)]
        lock_at(rung, &self.mutex)
    }

    /// [`lock_at`], for the holder that gives way.
    pub(crate) fn hold(&self, rung: Rung) -> Ranked<'_, T> {
        lock_at(rung, &self.mutex)
    }

    /// Whether a thread waits in [`lock`](Self::lock) (never, in a model).
    pub(crate) fn awaited(&self) -> bool {
        #[cfg(not(relaystore_loom))]
        return self.waiting.load(std::sync::atomic::Ordering::Relaxed) > 0;
        #[cfg(relaystore_loom)]
        false
    }

    /// Called with the mutex let go: waits, up to [`GIVE_WAY_MAX`], for
    /// the threads waiting in [`lock`](Self::lock) now to take it (those
    /// that come after them wait their turn).
    pub(crate) fn give_way(&self) {
        #[cfg(all(not(relaystore_loom), feature = "native"))]
        {
            use std::sync::atomic::Ordering::Relaxed;
            // Read in this order, a waiter counted in `waiting` is let in
            // after `before` was read, or (in a window of a few
            // instructions) just before: then the wait ends at its bound.
            let before = self.let_in.load(Relaxed);
            let waiting = self.waiting.load(Relaxed);
            if waiting > 0 {
                let since = std::time::Instant::now();
                let bound = give_way_max();
                while self.let_in.load(Relaxed).wrapping_sub(before) < waiting
                    && since.elapsed() < bound
                {
                    std::hint::spin_loop();
                }
            }
        }
    }

    /// How many threads wait in [`lock`](Self::lock), for tests.
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many threads have taken the mutex in [`lock`](Self::lock)
    /// after waiting for it, for tests.
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn let_in(&self) -> usize {
        self.let_in.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A value replaced whole while readers keep reading it: a reader sees the
/// old value or the new one, never a mix. `arc-swap` outside the model
/// checker (a read writes no shared memory); a mutex over an `Arc` under
/// loom, whose models must see every step.
pub(crate) struct Snapshot<T> {
    #[cfg(not(relaystore_loom))]
    current: arc_swap::ArcSwap<T>,
    #[cfg(relaystore_loom)]
    current: Mutex<Arc<T>>,
}

impl<T> Snapshot<T> {
    pub(crate) fn new(value: T) -> Self {
        Snapshot {
            #[cfg(not(relaystore_loom))]
            current: arc_swap::ArcSwap::from_pointee(value),
            #[cfg(relaystore_loom)]
            current: Mutex::new(Arc::new(value)),
        }
    }

    /// Reads the current value.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        #[cfg(not(relaystore_loom))]
        {
            f(&self.current.load())
        }
        #[cfg(relaystore_loom)]
        {
            let current = Arc::clone(&lock(&self.current));
            f(&current)
        }
    }

    /// Replaces the value whole.
    pub(crate) fn store(&self, value: T) {
        #[cfg(not(relaystore_loom))]
        self.current.store(Arc::new(value));
        #[cfg(relaystore_loom)]
        {
            *lock(&self.current) = Arc::new(value);
        }
    }
}

#[cfg(all(test, debug_assertions, not(relaystore_loom)))]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "lock hierarchy broken")]
    fn taking_a_tenant_index_under_a_wheel_lock_is_caught() {
        let (index, wheel) = (Mutex::new(()), Mutex::new(()));
        let _w = lock_at(Rung::Wheel, &wheel);
        let _i = lock_at(Rung::TenantIndex, &index);
    }
}

#[cfg(test)]
mod lock_table {
    use super::Rung;

    /// Every rung, in order: the match makes a new rung a compile error
    /// here until it is listed.
    fn name(rung: Rung) -> &'static str {
        match rung {
            Rung::Gate => "Gate",
            Rung::TenantIndex => "TenantIndex",
            Rung::Schedule => "Schedule",
            Rung::Wheel => "Wheel",
            Rung::Names => "Names",
            Rung::Shard => "Shard",
            Rung::Hub => "Hub",
            Rung::Inbox => "Inbox",
            Rung::Listener => "Listener",
            Rung::Stream => "Stream",
            Rung::Queue => "Queue",
            Rung::SlabFree => "SlabFree",
            Rung::SnapshotWriter => "SnapshotWriter",
            Rung::Latch => "Latch",
            Rung::Holders => "Holders",
        }
    }

    const RUNGS: [Rung; 15] = [
        Rung::Gate,
        Rung::TenantIndex,
        Rung::Schedule,
        Rung::Wheel,
        Rung::Names,
        Rung::Shard,
        Rung::Hub,
        Rung::Inbox,
        Rung::Listener,
        Rung::Stream,
        Rung::Queue,
        Rung::SlabFree,
        Rung::SnapshotWriter,
        Rung::Latch,
        Rung::Holders,
    ];

    /// `docs/ARCHITECTURE.md` states the hierarchy as a table of
    /// `| <number> `<rung>` | ...` rows: the same rungs, numbers and order
    /// as the enum, so the document cannot drift from the code.
    #[test]
    fn the_lock_table_in_the_docs_is_the_rungs() {
        let doc = include_str!("../../docs/ARCHITECTURE.md");
        let section = doc
            .split("## The lock hierarchy")
            .nth(1)
            .expect("docs/ARCHITECTURE.md has a lock hierarchy section");
        let section = section.split("\n## ").next().unwrap_or(section);
        let rows: Vec<(u8, &str)> = section
            .lines()
            .filter_map(|line| {
                let cell = line.strip_prefix("| ")?.split(" |").next()?;
                let (number, rung) = cell.split_once(' ')?;
                Some((number.parse().ok()?, rung.trim_matches('`')))
            })
            .collect();
        let expected: Vec<(u8, &str)> = RUNGS.iter().map(|&r| (r as u8, name(r))).collect();
        assert_eq!(rows, expected);
        for pair in RUNGS.windows(2) {
            assert!(pair[0] < pair[1], "RUNGS is in the enum's order");
        }
    }
}
