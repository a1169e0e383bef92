//! Versioned records and the compare-and-swap transition helper.
//!
//! # Ground rules
//!
//! - **One word of mutable state.** A record's deadline and the low part of
//!   its version live together in one `AtomicU64` ([`State`]): 40 bits of
//!   deadline in milliseconds (about 34.8 years of clock range) and a 24-bit
//!   transition sequence. A transition such as renew is therefore one shared
//!   map read plus one CAS on this word; it never takes a shard's write lock.
//!   A slab record changes under its slot's one lock, which excludes every
//!   other writer, so its renewal writes the word with a plain store
//!   instead ([`Head::transition_mut`], ADR 0051); readers that take no
//!   lock read it with the slot's sequence check (ADR 0076).
//! - **Versions.** The version a caller sees is `base + seq`. `base` is issued
//!   by the store-wide [`Versions`] counter when the record is created and is
//!   only changed (by [`Head::rebase`], under the record's exclusive lock) when
//!   `seq` runs out, which keeps the version unchanged. Before a record leaves
//!   the map, its final version is folded into the counter
//!   ([`Versions::retire`]) while the shard lock is still held, so a key that
//!   is deleted and created again always starts above every version the old
//!   record reached: no ABA, and versions strictly increase per key.
//! - **Liveness.** A record is live iff `now < deadline`. A deadline of zero
//!   means "dead": no clock reading makes it live.
//! - **The payload** (`value`) is immutable while shared; it is changed only
//!   through the shard's write lock, which also excludes every CAS.
//! - **The timer** field names the record's entry in its table's wheel. It is
//!   read and written only while that wheel's lock is held.

use crate::base::error::{ConflictReason, Error};
use crate::base::sync::{AtomicU64, Ordering};
use crate::base::time::{MonoTime, DEADLINE_MAX_MS};
use crossbeam_utils::CachePadded;

const SEQ_BITS: u32 = 24;
const SEQ_MAX: u64 = (1 << SEQ_BITS) - 1;
// A deadline fills the bits of the state word the sequence leaves.
const _: () = assert!(DEADLINE_MAX_MS == (1 << (u64::BITS - SEQ_BITS)) - 1);

/// How many times a transition retries a lost CAS before reporting
/// [`Error::Conflict`]. A CAS is lost only when another transition on the
/// same record succeeded in between, so reaching this bound means the record
/// is being hammered by concurrent writers.
pub const CAS_ATTEMPTS_MAX: usize = 16;

/// A record's packed `(deadline, seq)` word.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct State(u64);

impl State {
    pub(crate) fn new(deadline_ms: u64, seq: u64) -> Self {
        debug_assert!(
            deadline_ms <= DEADLINE_MAX_MS,
            "deadline {deadline_ms} out of range"
        );
        debug_assert!(seq <= SEQ_MAX);
        State((deadline_ms << SEQ_BITS) | seq)
    }

    pub(crate) fn deadline_ms(self) -> u64 {
        self.0 >> SEQ_BITS
    }

    pub(crate) fn seq(self) -> u64 {
        self.0 & SEQ_MAX
    }

    pub(crate) fn is_live(self, now: MonoTime) -> bool {
        now.as_millis() < self.deadline_ms()
    }
}

/// A consistent view of a record: its version and deadline, read together.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// The record's version; every transition increases it.
    pub version: u64,
    /// The monotonic instant at which the record stops being live.
    pub deadline: MonoTime,
}

impl Stamp {
    /// Time left before the deadline, measured from `now`.
    pub fn remaining(&self, now: MonoTime) -> std::time::Duration {
        self.deadline.saturating_since(now)
    }
}

/// Why a [`Head::transition`] did not happen.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The decision or the version check refused; report this error.
    Error(Error),
    /// The sequence is exhausted; rebase under the write lock and retry.
    SeqExhausted,
}

/// A record's head: its state word, version base and timer word, all
/// atomics, so that a slab slot can keep it beside its lock and readers
/// can read it with the slot's sequence check (`src/base/slot_word.rs`)
/// while the record's payload stays under the lock. A map record keeps
/// it inline ([`Record`]). Every store to it is `Release`, every load of
/// the state and base `Acquire`: what a sequence-checked read needs.
pub(crate) struct Head {
    state: AtomicU64,
    base: AtomicU64,
    timer: AtomicU64,
}

/// A versioned record as stored in a map table: its head and its payload.
/// A slab table keeps the same two apart (`src/mem/table.rs`).
pub(crate) struct Record<V> {
    pub(crate) head: Head,
    pub(crate) value: V,
}

impl<V> Record<V> {
    pub(crate) fn new(version: u64, deadline_ms: u64, timer: u64, value: V) -> Self {
        Record {
            head: Head::new(version, deadline_ms, timer),
            value,
        }
    }
}

impl<V> std::ops::Deref for Record<V> {
    type Target = Head;

    #[inline]
    fn deref(&self) -> &Head {
        &self.head
    }
}

impl Default for Head {
    /// An empty slot's head: dead (deadline zero), version zero.
    fn default() -> Self {
        Head::new(0, 0, 0)
    }
}

impl Head {
    pub(crate) fn new(version: u64, deadline_ms: u64, timer: u64) -> Self {
        Head {
            state: AtomicU64::new(State::new(deadline_ms, 0).0),
            base: AtomicU64::new(version),
            timer: AtomicU64::new(timer),
        }
    }

    /// Makes this head `from`'s copy: a slab slot taking a new record's
    /// head (under the slot's lock).
    pub(crate) fn set(&self, from: &Head) {
        self.base
            .store(from.base.load(Ordering::Relaxed), Ordering::Release);
        self.timer
            .store(from.timer.load(Ordering::Relaxed), Ordering::Release);
        self.state
            .store(from.state.load(Ordering::Relaxed), Ordering::Release);
    }

    /// A copy of this head (a slab slot's, as its record leaves it).
    pub(crate) fn copy(&self) -> Head {
        Head {
            state: AtomicU64::new(self.state.load(Ordering::Acquire)),
            base: AtomicU64::new(self.base.load(Ordering::Acquire)),
            timer: AtomicU64::new(self.timer.load(Ordering::Relaxed)),
        }
    }

    pub(crate) fn state(&self) -> State {
        State(self.state.load(Ordering::Acquire))
    }

    pub(crate) fn stamp_of(&self, state: State) -> Stamp {
        Stamp {
            version: self.base.load(Ordering::Acquire) + state.seq(),
            deadline: MonoTime::from_millis(state.deadline_ms()),
        }
    }

    pub(crate) fn stamp(&self) -> Stamp {
        self.stamp_of(self.state())
    }

    /// The word that names the record's wheel entry (`Timing` in
    /// `src/mem/table.rs`). Only with the owning wheel's lock held.
    pub(crate) fn timer(&self) -> u64 {
        self.timer.load(Ordering::Relaxed)
    }

    /// Only with the owning wheel's lock held.
    pub(crate) fn set_timer(&self, timer: u64) {
        self.timer.store(timer, Ordering::Relaxed);
    }

    /// Applies a transition by compare-and-swap.
    ///
    /// `decide` is a pure function from the current stamp to the new deadline
    /// (or a refusal). If `expected` is given, the transition applies only at
    /// exactly that version; otherwise a lost CAS is retried up to
    /// [`CAS_ATTEMPTS_MAX`] times against the fresh state. Returns the stamps
    /// before and after.
    pub(crate) fn transition(
        &self,
        expected: Option<u64>,
        mut decide: impl FnMut(Stamp) -> Result<u64, Error>,
    ) -> Result<(Stamp, Stamp), Refusal> {
        let mut current = self.state();
        for _ in 0..CAS_ATTEMPTS_MAX {
            let before = self.stamp_of(current);
            if let Some(expected) = expected {
                if expected != before.version {
                    return Err(Refusal::Error(Error::conflict(
                        ConflictReason::Version,
                        before.version,
                    )));
                }
            }
            let deadline_ms = decide(before).map_err(Refusal::Error)?;
            if current.seq() == SEQ_MAX {
                return Err(Refusal::SeqExhausted);
            }
            let next = State::new(deadline_ms, current.seq() + 1);
            match self.cas(current, next) {
                Ok(()) => return Ok((before, self.stamp_of(next))),
                Err(actual) => current = actual,
            }
        }
        Err(Refusal::Error(Error::conflict(
            ConflictReason::Version,
            self.stamp_of(current).version,
        )))
    }

    /// The one compare-and-swap of the state word. (In the model-checking
    /// build a fault switch can turn it into a plain store, the broken twin
    /// the loom models must catch; elsewhere that branch is compiled away.)
    fn cas(&self, current: State, next: State) -> Result<(), State> {
        if crate::base::faults::blind_stores() {
            self.state.store(next.0, Ordering::Release);
            return Ok(());
        }
        self.state
            .compare_exchange(current.0, next.0, Ordering::AcqRel, Ordering::Acquire)
            .map(drop)
            .map_err(State)
    }

    /// [`transition`](Self::transition) for a caller that holds the record
    /// exclusively (a slab slot's lock, ADR 0051): nothing can change the
    /// state word between the read and the write, so it is written with a
    /// plain store, not swapped, and an exhausted sequence is rebased in
    /// place.
    pub(crate) fn transition_mut(
        &self,
        expected: Option<u64>,
        decide: impl FnOnce(Stamp) -> Result<u64, Error>,
    ) -> Result<(Stamp, Stamp), Error> {
        if self.state().seq() == SEQ_MAX {
            self.rebase();
        }
        let current = self.observed_state();
        let before = self.stamp_of(current);
        if let Some(expected) = expected {
            if expected != before.version {
                return Err(Error::conflict(ConflictReason::Version, before.version));
            }
        }
        let deadline_ms = decide(before)?;
        let next = State::new(deadline_ms, current.seq() + 1);
        self.state.store(next.0, Ordering::Release);
        Ok((before, self.stamp_of(next)))
    }

    /// The state a decision under the record's lock works from: the state
    /// word as it is now. (The loom models' twins can hand it a reading
    /// stashed by [`stash_early_read`](Self::stash_early_read) under an
    /// earlier hold of the lock, check-then-act; outside the
    /// model-checking build there is never one.)
    #[inline]
    pub(crate) fn observed_state(&self) -> State {
        crate::base::faults::take_early_read().map_or_else(|| self.state(), State)
    }

    /// Remembers the state now, for this thread's next
    /// [`observed_state`](Self::observed_state) (the loom models' twins).
    pub(crate) fn stash_early_read(&self) {
        crate::base::faults::stash_early_read(self.state().0);
    }

    /// Moves the deadline and advances the version by one. Only for a
    /// caller that holds the record exclusively (a map shard's write lock,
    /// which excludes every concurrent CAS, or a slab slot's lock).
    pub(crate) fn bump(&self, deadline_ms: u64) -> Stamp {
        if self.state().seq() == SEQ_MAX {
            self.rebase();
        }
        let next = State::new(deadline_ms, self.state().seq() + 1);
        self.state.store(next.0, Ordering::Release);
        self.stamp_of(next)
    }

    /// Folds the sequence into the base so transitions can continue. The
    /// visible version does not change. Only for a caller that holds the
    /// record exclusively (as [`bump`](Self::bump)); readers that take no
    /// lock see the base and state change under the slot's sequence.
    pub(crate) fn rebase(&self) {
        let state = self.state();
        let base = self.base.load(Ordering::Relaxed);
        self.base.store(base + state.seq(), Ordering::Release);
        self.state
            .store(State::new(state.deadline_ms(), 0).0, Ordering::Release);
    }
}

/// The renewal decision: a record at `current` renewed at `now` moves to
/// `deadline_ms` only if it is still live (an absolute reset, refused once
/// the deadline has passed, swept or not). The model checker's broken twin
/// ignores the deadline and resurrects an expired record.
pub(crate) fn renewal(now: MonoTime, current: Stamp, deadline_ms: u64) -> Result<u64, Error> {
    use crate::base::faults::{active, StoreFault};
    if now < current.deadline || active(StoreFault::RenewIgnoresDeadline) {
        Ok(deadline_ms)
    } else {
        Err(Error::Expired)
    }
}

/// The store-wide version counter.
///
/// `issue` hands out a fresh base for a new record; `retire` is called with a
/// record's final version, under the shard lock, before the record leaves the
/// map. Together they make versions strictly increase per key across delete
/// and re-create, while an in-place transition touches no shared counter.
#[derive(Debug, Default)]
pub(crate) struct Versions {
    last: CachePadded<AtomicU64>,
}

impl Versions {
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn new() -> Self {
        Self::starting_after(0)
    }

    /// A counter whose first version is `floor + 1`.
    pub(crate) fn starting_after(floor: u64) -> Self {
        Versions {
            last: CachePadded::new(AtomicU64::new(floor)),
        }
    }

    pub(crate) fn issue(&self) -> u64 {
        self.last.fetch_add(1, Ordering::AcqRel) + 1
    }

    pub(crate) fn retire(&self, final_version: u64) {
        self.last.fetch_max(final_version, Ordering::AcqRel);
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    /// A record whose sequence has `left` transitions to go before it runs
    /// out.
    fn near_exhaustion(base: u64, deadline_ms: u64, left: u64) -> Record<()> {
        let record = Record::new(base, deadline_ms, 0, ());
        record
            .head
            .state
            .store(State::new(deadline_ms, SEQ_MAX - left).0, Ordering::Relaxed);
        record
    }

    #[test]
    fn an_exclusive_transition_rebases_a_spent_sequence_and_versions_move_by_one() {
        let record = near_exhaustion(100, 1_000, 2);
        let mut last = record.stamp().version;
        for step in 0..5u64 {
            let (before, after) = record
                .transition_mut(Some(last), |_| Ok(2_000 + step))
                .unwrap();
            assert_eq!(before.version, last);
            assert_eq!(after.version, last + 1, "step {step}");
            assert_eq!(after.deadline, MonoTime::from_millis(2_000 + step));
            assert_eq!(record.stamp(), after);
            last = after.version;
        }
        assert!(
            record.state().seq() < SEQ_MAX,
            "the sequence was rebased, with room again"
        );
    }

    #[test]
    fn a_shared_transition_asks_for_a_rebase_and_then_goes_on() {
        let record = near_exhaustion(100, 1_000, 0);
        let version = record.stamp().version;
        assert_eq!(
            record.transition(None, |_| Ok(2_000)),
            Err(Refusal::SeqExhausted)
        );
        assert_eq!(
            record.stamp().version,
            version,
            "the refusal changed nothing"
        );
        record.rebase();
        assert_eq!(
            record.stamp().version,
            version,
            "a rebase keeps the version"
        );
        let (_, after) = record.transition(None, |_| Ok(2_000)).unwrap();
        assert_eq!(after.version, version + 1);
    }

    #[test]
    fn an_exclusive_transition_at_the_wrong_version_or_refused_changes_nothing() {
        let record = near_exhaustion(100, 1_000, 10);
        let stamp = record.stamp();
        assert_eq!(
            record.transition_mut(Some(stamp.version - 1), |_| Ok(2_000)),
            Err(Error::Conflict {
                reason: ConflictReason::Version,
                current_version: stamp.version
            })
        );
        assert_eq!(
            record.transition_mut(None, |_| Err(Error::Expired)),
            Err(Error::Expired)
        );
        assert_eq!(record.stamp(), stamp);
    }
}
