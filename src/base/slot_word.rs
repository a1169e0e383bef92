//! `SlotLock`: a slab slot's one word, which is its generation, its
//! sequence and its write lock at once (the record shape of
//! `docs/adr/0076-records-with-a-home.md`).
//!
//! # Ground rules
//!
//! - **One word.** The high 32 bits are the slot's generation, the low
//!   32 its sequence. The sequence is odd while a writer holds the slot
//!   and even otherwise; every hold moves it by two (one to take the
//!   slot, one to give it back), so a word seen twice unchanged means no
//!   write began or ended in between.
//! - **Writers take turns.** A writer takes the slot by a compare-and-swap
//!   of an even word to the same word plus one, and gives it back by
//!   storing the next even sequence with `Release`. What the word guards
//!   in its cell is reached only through the guard, so only the holder
//!   reads or writes it.
//! - **Readers that write nothing.** A reader that needs only words kept
//!   beside the cell as atomics (the record's head, a kind's words: see
//!   `src/mem/slab.rs`) takes no lock: it loads the word with `Acquire`
//!   ([`SlotLock::stable`], `None` while a writer holds it), loads the
//!   words it needs with `Acquire`, and loads the word again
//!   ([`SlotLock::unchanged`]). The holder stores those words with
//!   `Release` after making the word odd, so a reader that saw any of
//!   its stores sees the odd word, or a later one, on its second load
//!   and reads again (the argument of `src/base/words.rs`). The
//!   generation in the word tells a reader which record the slot held.
//! - **A holder does not block.** A writer that finds the slot held spins
//!   a little and then yields its thread; every hold is a few loads and
//!   stores (no call that can wait is made under it), so the wait is
//!   short. It does not poison: a panic under the lock gives the slot
//!   back as the panicking holder left it.
//! - **A sequence runs for 2^31 holds before it repeats.** A reader
//!   fooled by a repeat would have had to stall through 2^31 writes of
//!   one slot between its two loads.

use crate::base::sync::{spin_wait, AtomicU64, Ordering};
use std::cell::UnsafeCell;
use std::marker::PhantomData;

const SEQ_MASK: u64 = 0xffff_ffff;

/// The generation a slot word carries.
#[inline]
pub(crate) fn generation_of(word: u64) -> u32 {
    (word >> 32) as u32
}

/// A slab slot's word and the value it guards (the record's locked part).
pub(crate) struct SlotLock<T> {
    word: AtomicU64,
    cell: UnsafeCell<T>,
}

// SAFETY: the cell is reached only through a `SlotGuard`, and at most one
// guard of a slot exists at a time (the compare-and-swap in `lock` takes
// the word from even to odd; only the guard's drop makes it even again).
// So sharing the lock between threads shares `T` only by moving access to
// it from one holder to the next, which needs `T: Send`, as `Mutex<T>`.
#[allow(unsafe_code)]
unsafe impl<T: Send> Sync for SlotLock<T> {}

/// A held [`SlotLock`]: the value (by `Deref`) and the generation.
pub(crate) struct SlotGuard<'a, T> {
    lock: &'a SlotLock<T>,
    /// Not `Send`: the hold belongs to the thread that took it.
    _not_send: PhantomData<*mut ()>,
}

impl<T> SlotLock<T> {
    pub(crate) fn new(generation: u32, value: T) -> Self {
        SlotLock {
            word: AtomicU64::new(u64::from(generation) << 32),
            cell: UnsafeCell::new(value),
        }
    }

    /// Takes the slot.
    #[inline]
    pub(crate) fn lock(&self) -> SlotGuard<'_, T> {
        if !self.try_take() {
            self.lock_slow();
        }
        SlotGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self) {
        let mut tries = 0u32;
        loop {
            if crate::base::sync::MODEL || tries >= 64 {
                spin_wait();
            } else {
                std::hint::spin_loop();
                tries += 1;
            }
            if self.try_take() {
                return;
            }
        }
    }

    /// One try to take the slot: its word from even to odd.
    #[inline]
    fn try_take(&self) -> bool {
        let word = self.word.load(Ordering::Relaxed);
        word & 1 == 0
            && self
                .word
                .compare_exchange(word, word + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Takes the slot if no one holds it.
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn try_lock(&self) -> Option<SlotGuard<'_, T>> {
        // `then`, not `then_some`: a guard made and dropped on failure
        // would give back a hold this call never took.
        self.try_take().then(|| SlotGuard {
            lock: self,
            _not_send: PhantomData,
        })
    }

    /// The word, if no writer holds the slot: the first load of a read
    /// that takes no lock.
    #[inline]
    pub(crate) fn stable(&self) -> Option<u64> {
        let word = self.word.load(Ordering::Acquire);
        (word & 1 == 0).then_some(word)
    }

    /// Whether the word is still `seen`: the last load of a read that
    /// takes no lock, after the words it read were loaded with `Acquire`.
    /// The model checker's broken twin does not look again.
    #[inline]
    pub(crate) fn unchanged(&self, seen: u64) -> bool {
        self.word.load(Ordering::Relaxed) == seen
            || crate::base::faults::active(crate::base::faults::StoreFault::SlotReadUnchecked)
    }
}

impl<T> SlotGuard<'_, T> {
    /// The slot's generation.
    #[inline]
    pub(crate) fn generation(&self) -> u32 {
        generation_of(self.lock.word.load(Ordering::Relaxed))
    }

    /// Moves the slot to `generation` (seen by readers once the slot is
    /// given back).
    pub(crate) fn set_generation(&mut self, generation: u32) {
        let word = self.lock.word.load(Ordering::Relaxed);
        self.lock.word.store(
            (u64::from(generation) << 32) | (word & SEQ_MASK),
            Ordering::Relaxed,
        );
    }
}

impl<T> Drop for SlotGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Only the holder writes the word, so this load is its own last
        // store; the sequence wraps within its 32 bits.
        let word = self.lock.word.load(Ordering::Relaxed);
        let seq = (word as u32).wrapping_add(1);
        self.lock
            .word
            .store((word & !SEQ_MASK) | u64::from(seq), Ordering::Release);
    }
}

impl<T> std::ops::Deref for SlotGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the slot's one holder (see the `Sync`
        // impl); the reference lives no longer than the guard's borrow.
        #[allow(unsafe_code)]
        unsafe {
            &*self.lock.cell.get()
        }
    }
}

impl<T> std::ops::DerefMut for SlotGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference through the guard.
        #[allow(unsafe_code)]
        unsafe {
            &mut *self.lock.cell.get()
        }
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_hold_moves_the_sequence_by_two_and_keeps_the_generation() {
        let slot = SlotLock::new(7, 0u64);
        let first = slot.stable().expect("no one holds it");
        assert_eq!(generation_of(first), 7);
        {
            let mut held = slot.lock();
            assert_eq!(slot.stable(), None, "held: a reader waits");
            *held += 1;
            held.set_generation(8);
            assert_eq!(held.generation(), 8);
            assert!(slot.try_lock().is_none(), "one holder at a time");
        }
        let after = slot.stable().expect("given back");
        assert_eq!(generation_of(after), 8);
        assert_eq!(after & SEQ_MASK, (first & SEQ_MASK) + 2);
        assert!(!slot.unchanged(first));
        assert!(slot.unchanged(after));
        assert_eq!(*slot.lock(), 1);
    }

    #[test]
    fn the_sequence_wraps_without_touching_the_generation() {
        let slot = SlotLock::new(3, ());
        slot.word
            .store((3u64 << 32) | (SEQ_MASK - 1), Ordering::Relaxed);
        drop(slot.lock());
        let word = slot.stable().expect("given back");
        assert_eq!(generation_of(word), 3);
        assert_eq!(word & SEQ_MASK, 0);
    }

    #[test]
    fn holders_exclude_each_other() {
        // Two threads add to a plain counter under the lock; a lost update
        // would show as a short count.
        let slot = std::sync::Arc::new(SlotLock::new(1, 0u64));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let slot = std::sync::Arc::clone(&slot);
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        *slot.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*slot.lock(), 200_000);
    }
}
