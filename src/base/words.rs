//! `WordSnapshot`: a value of plain words (limits, quotas), replaced whole
//! by a rare writer and read by every creation with loads alone.
//!
//! # Ground rules
//!
//! - **A reader sees one value whole**: the old one or the new one, never
//!   a mix. The value's words sit behind a sequence number that a writer
//!   makes odd before it changes any word and even again after the last;
//!   a reader reads the number, the words, and the number again, and
//!   keeps what it read only if the number was even and did not move.
//! - **Why that holds**: a writer stores each word with `Release` after
//!   making the number odd, and a reader loads each word with `Acquire`.
//!   A reader that saw any new word therefore sees the odd number (or a
//!   later one) on its second read, and reads again. A reader whose first
//!   read saw the even number a writer left sees every word of it.
//! - **A read writes nothing shared**, where an `arc-swap` load writes and
//!   then clears a slot of the thread's (two read-modify-writes).
//! - **Writers take turns** under a leaf mutex (`Rung::SnapshotWriter`),
//!   held only while they store the words; a reader that meets a writer
//!   at work waits for it ([`spin_wait`]), which a writer never makes
//!   long.
//! - **Under the model checker** the store keeps its limits in a
//!   [`Snapshot`](crate::base::sync::Snapshot) instead ([`LimitSnapshot`]): one
//!   modelled lock, so the store's models explore the protocol around the
//!   read, while `loom-tests/quota.rs` explores this type's own reads and
//!   writes (with its broken twin, a read that does not look again).

use crate::base::sync::{lock_at, spin_wait, AtomicU64, Mutex, Ordering, Rung};
use std::marker::PhantomData;

/// The most words a [`WordSnapshot`] holds (a reader copies them onto its
/// stack): 32, 256 bytes.
pub(crate) const WORDS_MAX: usize = 32;

/// A value that is a fixed number of `u64` words.
pub(crate) trait Words: Sized {
    /// How many words the value is (at most [`WORDS_MAX`]).
    const LEN: usize;
    /// Writes the value's words into `out` (`LEN` long).
    fn put(&self, out: &mut [u64]);
    /// The value whose words are `words` (`LEN` long).
    fn get(words: &[u64]) -> Self;
}

/// Where the store keeps its limits and each tenant's quotas.
#[cfg(not(relaystore_loom))]
pub(crate) type LimitSnapshot<T> = WordSnapshot<T>;
/// Where the store keeps its limits and each tenant's quotas: a modelled
/// lock in the model-checking build (see the module's rules).
#[cfg(relaystore_loom)]
pub(crate) type LimitSnapshot<T> = crate::base::sync::Snapshot<T>;

/// A [`Words`] value replaced whole while readers keep reading it.
pub(crate) struct WordSnapshot<T> {
    /// Even when no writer is at work; each replacement adds two.
    seq: AtomicU64,
    words: Box<[AtomicU64]>,
    writer: Mutex<()>,
    of: PhantomData<fn() -> T>,
}

impl<T: Words> WordSnapshot<T> {
    pub(crate) fn new(value: T) -> Self {
        const {
            assert!(
                T::LEN <= WORDS_MAX,
                "a word snapshot holds at most WORDS_MAX words"
            )
        };
        let mut buf = [0u64; WORDS_MAX];
        value.put(&mut buf[..T::LEN]);
        WordSnapshot {
            seq: AtomicU64::new(0),
            words: buf[..T::LEN].iter().map(|&w| AtomicU64::new(w)).collect(),
            writer: Mutex::new(()),
            of: PhantomData,
        }
    }

    /// Reads the current value and runs `f` on it.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        let buf = self.consistent(|| {
            let mut buf = [0u64; WORDS_MAX];
            for (out, word) in buf.iter_mut().zip(self.words.iter()) {
                *out = word.load(Ordering::Acquire);
            }
            buf
        });
        f(&T::get(&buf[..T::LEN]))
    }

    /// Reads the words at `at` (each below `T::LEN`) of the current value,
    /// all of one value: what a caller that needs a few of many words
    /// reads, without copying the rest.
    #[inline]
    pub(crate) fn read_words<const N: usize>(&self, at: [usize; N]) -> [u64; N] {
        self.consistent(|| at.map(|i| self.words[i].load(Ordering::Acquire)))
    }

    /// The one read protocol: runs `load` (which loads words with
    /// `Acquire`) between two looks at the sequence number, until it ran
    /// with no writer at work and none beginning, and returns what it
    /// loaded then. The first try is inlined into the reader; the retries
    /// after a writer was seen are out of line.
    #[inline]
    fn consistent<X>(&self, mut load: impl FnMut() -> X) -> X {
        match self.try_once(&mut load) {
            Some(loaded) => loaded,
            None => self.retry(load),
        }
    }

    /// One try of [`consistent`](Self::consistent): what `load` loaded, if
    /// no writer was at work before it or began while it ran.
    #[inline]
    fn try_once<X>(&self, load: &mut impl FnMut() -> X) -> Option<X> {
        let before = self.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            return None;
        }
        let loaded = load();
        // The broken twin of the model checker keeps what it loaded
        // without looking again.
        let unchecked =
            crate::base::faults::active(crate::base::faults::StoreFault::SnapshotUnchecked);
        (unchecked || self.seq.load(Ordering::Relaxed) == before).then_some(loaded)
    }

    /// The tries after one met a writer: each waits a moment first.
    #[cold]
    #[inline(never)]
    fn retry<X>(&self, mut load: impl FnMut() -> X) -> X {
        loop {
            spin_wait();
            if let Some(loaded) = self.try_once(&mut load) {
                return loaded;
            }
        }
    }

    /// Replaces the value whole.
    pub(crate) fn store(&self, value: T) {
        let mut buf = [0u64; WORDS_MAX];
        value.put(&mut buf[..T::LEN]);
        let _turn = lock_at(Rung::SnapshotWriter, &self.writer);
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq + 1, Ordering::Relaxed);
        for (word, &new) in self.words.iter().zip(&buf) {
            word.store(new, Ordering::Release);
        }
        self.seq.store(seq + 2, Ordering::Release);
    }
}

/// The model-checking build's stand-in answers the same reads.
#[cfg(relaystore_loom)]
impl<T: Words> crate::base::sync::Snapshot<T> {
    /// [`WordSnapshot::read_words`], from the one value the lock guards.
    pub(crate) fn read_words<const N: usize>(&self, at: [usize; N]) -> [u64; N] {
        self.read(|value| {
            let mut buf = [0u64; WORDS_MAX];
            value.put(&mut buf[..T::LEN]);
            at.map(|i| buf[i])
        })
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Pair(u64, u64);

    impl Words for Pair {
        const LEN: usize = 2;
        fn put(&self, out: &mut [u64]) {
            out.copy_from_slice(&[self.0, self.1]);
        }
        fn get(words: &[u64]) -> Self {
            Pair(words[0], words[1])
        }
    }

    #[test]
    fn a_read_sees_the_last_value_stored() {
        let s = WordSnapshot::new(Pair(1, 2));
        assert_eq!(s.read(|p| (p.0, p.1)), (1, 2));
        s.store(Pair(3, u64::MAX));
        assert_eq!(s.read(|p| (p.0, p.1)), (3, u64::MAX));
        assert_eq!(s.read_words([1, 0, 1]), [u64::MAX, 3, u64::MAX]);
        assert_eq!(s.seq.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn readers_racing_a_writer_never_see_a_mix() {
        // Whole values have equal halves; a mix of two would not. Real
        // threads meet only some interleavings; the loom model
        // (`loom-tests/quota.rs`, with its broken twin) explores them all.
        let s = std::sync::Arc::new(WordSnapshot::new(Pair(0, 0)));
        let writer = {
            let s = std::sync::Arc::clone(&s);
            std::thread::spawn(move || {
                for i in 1..=20_000 {
                    s.store(Pair(i, i));
                }
            })
        };
        let mut last = 0;
        while !writer.is_finished() || last < 20_000 {
            let (a, b) = s.read(|p| (p.0, p.1));
            assert_eq!(a, b, "a read mixed two values");
            let [c, d] = s.read_words([1, 0]);
            assert_eq!(c, d, "a read of words mixed two values");
            assert!(a >= last, "a read went back");
            last = a;
        }
        writer.join().unwrap();
    }
}
