//! `Slab`: records addressed by the keys it issues.
//!
//! A lease's or a join attempt's id is its place in a slab: a slot index
//! in the low 32 bits of the key and the slot's generation in the high 32. Finding a record is
//! arithmetic on the key and one slot's lock, where a hash map hashes,
//! takes its shard's lock (one word shared by every key of the shard, so
//! two threads working on different records still write the same line)
//! and probes. A slot's lock lives in the slot, beside the record it
//! guards, so a renewal writes one line of its own and no other.
//!
//! # Ground rules
//!
//! - **A key names one record, once.** Every slot carries a generation;
//!   a key reaches the slot's record only while the slot is at the key's
//!   generation, checked under the slot's lock. Emptying a slot advances
//!   its generation inside the same hold of the lock, so a key issued
//!   before a removal never reaches the record stored after it: a renewal
//!   or a read holding the slot's lock excludes the removal and the reuse
//!   both (ADR 0036). The generation lives in the lock's word, beside the
//!   mutex's byte (ADR 0049).
//! - **Issued, then filled.** [`claim`](Slab::claim) hands out an empty
//!   slot's key; only its claimant fills it ([`upsert`](Slab::upsert)).
//!   A claim that is never filled goes back with
//!   [`unclaim`](Slab::unclaim), which does nothing if the slot was filled
//!   (or filled and emptied) meanwhile.
//! - **Memory is type-stable and bounded.** Slots live in segments that
//!   are allocated the first time a claim needs one and kept for the
//!   slab's life; an emptied slot goes to a free list and is reused before
//!   any new one is made. So the slab holds at most the most slots that
//!   were ever filled or claimed at once, plus one per thread caught
//!   giving a slot back while another looked for one, plus the rest of
//!   the last segment, and never more than [`SLOTS_MAX`].
//! - **A slot whose generation ran out is retired**, never reused: after
//!   2^32 - 1 records in one slot, one slot (one record's size) is given
//!   up rather than let a key from 2^32 reuses ago match again.
//! - **Locks.** A slot's lock is on the map rung of the hierarchy (a
//!   record's lock, exactly as a map shard's); a free list's lock is a leaf
//!   taken with no slot lock held.

use crate::base::ids::SLOTS_MAX;
use crate::base::slot_word::{SlotGuard, SlotLock};
use crate::base::sync::{enter, lock_at, AtomicI64, AtomicU64, Mutex, Ordering, Rung};
use crate::mem::shard::Upsert;
use crossbeam_utils::CachePadded;
use std::sync::OnceLock;

/// Slots in the first segment; each later one doubles, up to
/// `SEGMENT_SLOTS_MAX`. Small in the model-checking build, where every
/// slot is a modelled lock.
const FIRST_SEGMENT_SLOTS: u64 = crate::base::sync::sized(1 << 10, 1 << 3) as u64;
/// Segments double this many times (to 8,192 slots), then stay at their
/// largest size, so the last segment leaves at most 8,191 slots unused
/// (5 % of a slab of 10^5, under 1 % of one of 10^6).
const DOUBLINGS: u32 = 3;
const SEGMENT_SLOTS_MAX: u64 = FIRST_SEGMENT_SLOTS << DOUBLINGS;
/// Slots in the segments that double.
const GROWING_SLOTS: u64 = FIRST_SEGMENT_SLOTS * ((1 << DOUBLINGS) - 1);
const SEGMENTS: usize =
    DOUBLINGS as usize + ((SLOTS_MAX - GROWING_SLOTS) / SEGMENT_SLOTS_MAX) as usize + 1;
/// Segments per directory chunk. The directory is two levels deep so that
/// an empty slab costs a few kilobytes, not a table for every segment
/// [`SLOTS_MAX`] allows.
const CHUNK: usize = 256;
const CHUNKS: usize = SEGMENTS.div_ceil(CHUNK);

/// Free lists per slab. A thread takes slots from, and returns them to,
/// its own list while it has any, so two threads creating and removing
/// records rarely take the same free-list lock.
const FREE_LISTS: usize = 8;

/// The generation a new slot starts at; zero is never a live generation,
/// so no key with a zero high half ever finds a record.
const FIRST_GENERATION: u32 = 1;

/// The key of slot `index` at `generation`.
fn key_of(index: u32, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(index)
}

fn index_of(key: u64) -> u32 {
    key as u32
}

fn generation_of(key: u64) -> u32 {
    (key >> 32) as u32
}

/// Which segment holds slot `index`, and where in it.
fn locate(index: u64) -> (usize, usize) {
    if index < GROWING_SLOTS {
        // Segment k starts at FIRST * (2^k - 1).
        let k = (index / FIRST_SEGMENT_SLOTS + 1).ilog2();
        let start = FIRST_SEGMENT_SLOTS * ((1 << k) - 1);
        (k as usize, (index - start) as usize)
    } else {
        let past = index - GROWING_SLOTS;
        (
            DOUBLINGS as usize + (past / SEGMENT_SLOTS_MAX) as usize,
            (past % SEGMENT_SLOTS_MAX) as usize,
        )
    }
}

fn segment_len(segment: usize) -> u64 {
    FIRST_SEGMENT_SLOTS << (segment as u32).min(DOUBLINGS)
}

/// A record's place: the record, if the slot holds one, under the slot's
/// lock, whose word also carries the slot's generation and sequence; and
/// beside the lock what readers may read without taking it (`B`: atomics
/// the lock's holder writes, read by [`Slab::peek`]).
struct Slot<V, B> {
    cell: SlotLock<Option<V>>,
    beside: B,
}

/// Whether `key` is of the held slot's current generation: the one check
/// that keeps a key from reaching a later record in its slot. The model
/// checker's broken twin skips it.
fn is_at<V>(cell: &SlotGuard<'_, Option<V>>, key: u64) -> bool {
    cell.generation() == generation_of(key)
        || crate::base::faults::active(crate::base::faults::StoreFault::SlotIgnoresGeneration)
}

struct FreeList {
    /// The next key of each free slot (its index at its next generation),
    /// so a claim reads nothing of the slot it takes.
    keys: Mutex<Vec<u64>>,
    /// The list's length, read without its lock to skip empty lists.
    len: AtomicI64,
    /// Records filled minus records emptied by the threads using this
    /// list (either may be negative; the sum over lists is the count).
    filled: AtomicI64,
}

/// A run of slots, made at once and kept.
type Segment<V, B> = Box<[Slot<V, B>]>;
/// [`CHUNK`] segments' places in the directory, made at once and kept.
type Chunk<V, B> = Box<[OnceLock<Segment<V, B>>]>;

/// A slab of `V`s addressed by the keys it issues, each slot with a `B`
/// beside its lock that readers read without taking it.
pub(crate) struct Slab<V, B = ()> {
    directory: Box<[OnceLock<Chunk<V, B>>]>,
    /// Slots handed out so far, counting from index 0.
    made: CachePadded<AtomicU64>,
    free: Box<[CachePadded<FreeList>]>,
}

/// The free list the calling thread uses.
fn home() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::thread_local! {
        static HOME: usize = NEXT.fetch_add(1, Ordering::Relaxed) % FREE_LISTS;
    }
    HOME.with(|h| *h)
}

impl<V, B: Default> Slab<V, B> {
    pub(crate) fn new() -> Self {
        let slab = Slab {
            directory: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            made: CachePadded::new(AtomicU64::new(0)),
            free: (0..FREE_LISTS)
                .map(|_| {
                    CachePadded::new(FreeList {
                        keys: Mutex::new(Vec::new()),
                        len: AtomicI64::new(0),
                        filled: AtomicI64::new(0),
                    })
                })
                .collect(),
        };
        // In the model-checking build the first segment is made up front,
        // so no model ever races two threads into making one (the std
        // one-time cell is not a modelled primitive).
        if crate::base::sync::MODEL {
            slab.segment(0);
        }
        slab
    }

    fn segment(&self, k: usize) -> &[Slot<V, B>] {
        let chunk =
            self.directory[k / CHUNK].get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
        chunk[k % CHUNK].get_or_init(|| {
            (0..segment_len(k))
                .map(|_| Slot {
                    cell: SlotLock::new(FIRST_GENERATION, None),
                    beside: B::default(),
                })
                .collect()
        })
    }

    /// The slot at `index`, if its segment exists.
    fn slot(&self, index: u32) -> Option<&Slot<V, B>> {
        let (k, at) = locate(u64::from(index));
        let chunk = self.directory.get(k / CHUNK)?.get()?;
        chunk[k % CHUNK].get()?.get(at)
    }

    /// Issues the key of an empty slot, for the caller to fill. `None` when
    /// the slab holds [`SLOTS_MAX`] slots and all are taken.
    pub(crate) fn claim(&self) -> Option<u64> {
        let home = home();
        let lists = (0..FREE_LISTS).map(|i| (home + i) % FREE_LISTS);
        for (n, list) in lists.enumerate() {
            let list = &self.free[list];
            // The thread's own list is always looked in; the others only
            // if they seem to hold something.
            if n > 0 && list.len.load(Ordering::Relaxed) <= 0 {
                continue;
            }
            let popped = {
                let mut keys = lock_at(Rung::SlabFree, &list.keys);
                let popped = keys.pop();
                list.len.store(keys.len() as i64, Ordering::Relaxed);
                popped
            };
            if popped.is_some() {
                return popped;
            }
        }
        // `AcqRel`, to order a claim against a visit that read the count
        // before it (`for_each`).
        let index = self.made.fetch_add(1, Ordering::AcqRel);
        if index >= SLOTS_MAX {
            self.made.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        self.segment(locate(index).0);
        Some(key_of(index as u32, FIRST_GENERATION))
    }

    /// Gives back a claimed slot that was never filled. Does nothing if the
    /// slot was filled (it is the record's now) or filled and emptied (its
    /// removal gave it back).
    pub(crate) fn unclaim(&self, key: u64) {
        let Some(slot) = self.slot(index_of(key)) else {
            return;
        };
        let next = {
            let _slot = enter(Rung::Shard);
            let mut cell = slot.cell.lock();
            if cell.generation() != generation_of(key) || cell.is_some() {
                return;
            }
            Self::advance(&mut cell, index_of(key))
        };
        self.release(next);
    }

    /// Moves an emptied slot to its next generation and returns the slot's
    /// next key; `None` if it has no generation left (it is retired).
    fn advance(cell: &mut SlotGuard<'_, Option<V>>, index: u32) -> Option<u64> {
        match cell.generation().checked_add(1) {
            Some(next) if next != u32::MAX => {
                cell.set_generation(next);
                Some(key_of(index, next))
            }
            _ => {
                cell.set_generation(u32::MAX);
                None
            }
        }
    }

    /// Puts an emptied slot's next key on the caller's free list (unless
    /// the slot is retired).
    fn release(&self, next: Option<u64>) {
        let Some(key) = next else {
            return;
        };
        let list = &self.free[home()];
        let mut keys = lock_at(Rung::SlabFree, &list.keys);
        keys.push(key);
        list.len.store(keys.len() as i64, Ordering::Relaxed);
    }

    /// The slot `key` may name: it exists and the key's generation is one
    /// a record can have.
    fn slot_of(&self, key: u64) -> Option<&Slot<V, B>> {
        let generation = generation_of(key);
        if generation == 0 || generation == u32::MAX {
            return None;
        }
        self.slot(index_of(key))
    }

    /// Runs `f` on the record under the slot's lock.
    #[inline]
    pub(crate) fn read<R>(&self, key: &u64, f: impl FnOnce(&B, &V) -> R) -> Option<R> {
        let slot = self.slot_of(*key)?;
        let _slot = enter(Rung::Shard);
        let cell = slot.cell.lock();
        if !is_at(&cell, *key) {
            return None;
        }
        cell.as_ref().map(|v| f(&slot.beside, v))
    }

    /// Runs `f` on the record under the slot's lock, to change it (and
    /// what is beside it: the holder's stores to it are `Release`).
    #[inline]
    pub(crate) fn update<R>(&self, key: &u64, f: impl FnOnce(&B, &mut V) -> R) -> Option<R> {
        let slot = self.slot_of(*key)?;
        let _slot = enter(Rung::Shard);
        let mut cell = slot.cell.lock();
        if !is_at(&cell, *key) {
            return None;
        }
        cell.as_mut().map(|v| f(&slot.beside, v))
    }

    /// Runs `f` on slot `index`'s record, whatever its generation, under
    /// the slot's lock, with the record's key: for a caller that finds
    /// records by what they hold (a name index's hint), not by key.
    #[inline]
    pub(crate) fn read_at<R>(&self, index: u32, f: impl FnOnce(u64, &B, &V) -> R) -> Option<R> {
        let slot = self.slot(index)?;
        let _slot = enter(Rung::Shard);
        let cell = slot.cell.lock();
        let key = key_of(index, cell.generation());
        cell.as_ref().map(|v| f(key, &slot.beside, v))
    }

    /// [`read_at`](Self::read_at), to change the record.
    #[inline]
    pub(crate) fn update_at<R>(
        &self,
        index: u32,
        f: impl FnOnce(u64, &B, &mut V) -> R,
    ) -> Option<R> {
        let slot = self.slot(index)?;
        let _slot = enter(Rung::Shard);
        let mut cell = slot.cell.lock();
        let key = key_of(index, cell.generation());
        cell.as_mut().map(|v| f(key, &slot.beside, v))
    }

    /// Runs `f` on what is beside `key`'s slot without taking its lock,
    /// with the slot's sequence check: `f` loads what it needs with
    /// `Acquire` and may run more than once (it must only load); its
    /// result is kept from a run that no write overlapped, while the slot
    /// was at `key`'s generation. `None` when the slot is at another
    /// generation (its record is gone). Writes nothing shared. `f` may be
    /// handed words from a write at work (the run is then thrown away), so
    /// it must not panic on any value of them.
    #[inline]
    pub(crate) fn peek<R>(&self, key: &u64, mut f: impl FnMut(&B) -> R) -> Option<R> {
        let slot = self.slot_of(*key)?;
        loop {
            if let Some(word) = slot.cell.stable() {
                if generation_of(word) != generation_of(*key)
                    && !crate::base::faults::active(
                        crate::base::faults::StoreFault::SlotIgnoresGeneration,
                    )
                {
                    return None;
                }
                let seen = f(&slot.beside);
                if slot.cell.unchanged(word) {
                    return Some(seen);
                }
            }
            crate::base::sync::spin_wait();
        }
    }

    /// [`peek`](Self::peek) at slot `index`, whatever record it holds:
    /// `f` tells from what is beside the slot whether it is the record
    /// looked for (a name index's hint). `None` if the slot was never
    /// made.
    #[inline]
    pub(crate) fn peek_at<R>(&self, index: u32, mut f: impl FnMut(&B) -> R) -> Option<R> {
        let slot = self.slot(index)?;
        loop {
            if let Some(word) = slot.cell.stable() {
                let seen = f(&slot.beside);
                if slot.cell.unchanged(word) {
                    return Some(seen);
                }
            }
            crate::base::sync::spin_wait();
        }
    }

    /// Decides, under the slot's lock, what to do with the
    /// claimed `key`. Only the claimant of a key fills it, so a slot at
    /// another generation is a broken invariant and panics (before
    /// `decide` is asked, with nothing changed).
    pub(crate) fn upsert<R>(
        &self,
        key: u64,
        decide: impl FnOnce(&B, Option<&mut V>) -> Upsert<V, R>,
    ) -> (R, Option<V>) {
        let slot = self
            .slot_of(key)
            .expect("only a key the slab issued is filled");
        let _slot = enter(Rung::Shard);
        let mut cell = slot.cell.lock();
        assert_eq!(
            cell.generation(),
            generation_of(key),
            "only the claimant of a slot fills it"
        );
        match decide(&slot.beside, cell.as_mut()) {
            Upsert::Put(value, r) => {
                let replaced = cell.replace(value);
                if replaced.is_none() {
                    self.free[home()].filled.fetch_add(1, Ordering::Relaxed);
                }
                (r, replaced)
            }
            Upsert::Keep(r) => (r, None),
        }
    }

    /// Empties the slot if `decide` approves its record under the slot's
    /// lock; the slot moves to its next generation in the same
    /// hold, then goes back to a free list. `None` if `key` names no
    /// record; `Some(Err)` carries the refusal.
    pub(crate) fn remove_if<E>(
        &self,
        key: &u64,
        decide: impl FnOnce(&B, &mut V) -> Result<(), E>,
    ) -> Option<Result<V, E>> {
        let slot = self.slot_of(*key)?;
        let (value, next) = {
            let _slot = enter(Rung::Shard);
            let mut cell = slot.cell.lock();
            if !is_at(&cell, *key) {
                return None;
            }
            if let Err(e) = decide(&slot.beside, cell.as_mut()?) {
                return Some(Err(e));
            }
            let value = cell.take().expect("seen under the same lock");
            (value, Self::advance(&mut cell, index_of(*key)))
        };
        self.free[home()].filled.fetch_sub(1, Ordering::Relaxed);
        self.release(next);
        Some(Ok(value))
    }

    /// Records held.
    pub(crate) fn len(&self) -> usize {
        let filled: i64 = self
            .free
            .iter()
            .map(|l| l.filled.load(Ordering::Relaxed))
            .sum();
        usize::try_from(filled).unwrap_or(0)
    }

    /// The word of `key`'s slot (generation and sequence): every hold of
    /// the slot's lock moves it, so a test reads whether a call wrote it.
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn word(&self, key: u64) -> Option<u64> {
        self.slot_of(key)?.cell.stable()
    }

    /// The word of slot `index`, whatever its generation.
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn word_at(&self, index: u32) -> Option<u64> {
        self.slot(index)?.cell.stable()
    }

    /// Slots made so far (filled, free, claimed or retired).
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn slots(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    /// Visits every record, one slot at a time, under their locks. Not a
    /// snapshot, but ordered against a concurrent fill: a fill the visit
    /// misses happens after everything the visitor did before the visit
    /// began (a drain's stop, ADR 0043). The count of slots is read with a
    /// read-modify-write, which reads the newest count: a claim that made
    /// a slot past that count read the count after the visit did, and so
    /// happens after it. A slot within the count is read under its lock,
    /// so a fill of it is seen or takes the lock after the visit let it
    /// go; one whose segment is still being made is waited for (or its
    /// segment made), never skipped.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&u64, &B, &V)) {
        let made =
            if crate::base::faults::active(crate::base::faults::StoreFault::SlabVisitLoadsCount) {
                self.made.load(Ordering::Acquire)
            } else {
                self.made.fetch_add(0, Ordering::AcqRel)
            };
        for index in 0..made.min(SLOTS_MAX) as u32 {
            let (k, at) = locate(u64::from(index));
            let slot = &self.segment(k)[at];
            let _slot = enter(Rung::Shard);
            let cell = slot.cell.lock();
            if let Some(value) = cell.as_ref() {
                f(&key_of(index, cell.generation()), &slot.beside, value);
            }
        }
    }
}

impl<V, B: Default> Slab<V, B> {
    /// Visits the records of slots `start..` in slot order, one slot at a
    /// time under its lock, while `f` says go on (at most `max_slots`
    /// slots). Returns the slot to resume at, or `None` once every slot
    /// made so far was visited. A record that stays in its slot for the
    /// whole of a resumed visit is seen exactly once.
    pub(crate) fn visit_from(
        &self,
        start: u32,
        max_slots: u32,
        mut f: impl FnMut(&u64, &B, &V) -> bool,
    ) -> Option<u32> {
        let made = self.made.load(Ordering::Acquire).min(SLOTS_MAX) as u32;
        let end = start.saturating_add(max_slots).min(made);
        for index in start..end {
            let (k, at) = locate(u64::from(index));
            let slot = &self.segment(k)[at];
            let go_on = {
                let _slot = enter(Rung::Shard);
                let cell = slot.cell.lock();
                match cell.as_ref() {
                    Some(value) => f(&key_of(index, cell.generation()), &slot.beside, value),
                    None => true,
                }
            };
            if !go_on {
                return Some(index + 1).filter(|&next| next < made);
            }
        }
        Some(end).filter(|&next| next < made)
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_slots_lock_and_generation_cost_one_word() {
        // One per record: std's lock would add 16 bytes and the generation
        // 8 more with its padding; a reader-writer lock's word and the
        // generation, 16.
        type Record = (Box<u8>, [u64; 8]);
        assert_eq!(
            std::mem::size_of::<Slot<Record, ()>>(),
            std::mem::size_of::<Option<Record>>() + std::mem::size_of::<u64>()
        );
    }

    #[test]
    fn the_generation_beside_the_lock_is_the_slots_own() {
        // The word holds the mutex's byte and the generation: moving one
        // must not disturb the other.
        let slab: Slab<u8> = Slab::new();
        let key = slab.claim().unwrap();
        let slot = slab.slot(index_of(key)).unwrap();
        {
            let mut held = slot.cell.lock();
            assert_eq!(held.generation(), FIRST_GENERATION);
            held.set_generation(u32::MAX - 1);
            assert_eq!(held.generation(), u32::MAX - 1);
            // Still held: another thread cannot take it.
            std::thread::scope(|s| {
                s.spawn(|| assert!(slot.cell.try_lock().is_none()));
            });
        }
        assert_eq!(slot.cell.lock().generation(), u32::MAX - 1);
        assert!(slot.cell.try_lock().is_some());
    }

    #[test]
    fn a_slots_lock_excludes_and_its_generation_follows_the_holders() {
        // Two threads change a record and the generation together under
        // the slot's lock; every change survives, and each holder finds
        // the generation the last holder left (a race between the two
        // would lose increments, or trip a race detector such as Miri's).
        let slab: Slab<u64> = Slab::new();
        let key = slab.claim().unwrap();
        slab.upsert(key, |_, _| Upsert::Put(0, ()));
        let slot = slab.slot(index_of(key)).unwrap();
        const ROUNDS: u64 = 200;
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..ROUNDS {
                        let mut held = slot.cell.lock();
                        let value = held.as_mut().unwrap();
                        *value += 1;
                        let next = held.generation() + 1;
                        held.set_generation(next);
                        std::thread::yield_now();
                        assert_eq!(held.generation(), next);
                    }
                });
            }
        });
        let held = slot.cell.lock();
        assert_eq!(*held, Some(2 * ROUNDS));
        assert_eq!(held.generation(), FIRST_GENERATION + 2 * ROUNDS as u32);
    }

    #[test]
    fn segments_tile_the_index_space() {
        let mut expected = (0usize, 0usize);
        for index in 0..GROWING_SLOTS + 3 * SEGMENT_SLOTS_MAX {
            assert_eq!(locate(index), expected, "index {index}");
            expected.1 += 1;
            if expected.1 as u64 == segment_len(expected.0) {
                expected = (expected.0 + 1, 0);
            }
        }
        // The last slot is in the last segment (which the limit may cut
        // short: no slot past it is ever handed out).
        let (last, at) = locate(SLOTS_MAX - 1);
        assert_eq!(last, SEGMENTS - 1);
        assert!((at as u64) < segment_len(last));
    }

    #[test]
    fn a_key_reaches_its_record_and_no_later_one() {
        let slab: Slab<_> = Slab::new();
        let first = slab.claim().unwrap();
        slab.upsert(first, |_, _| Upsert::Put("a", ()));
        assert_eq!(slab.read(&first, |_, v| *v), Some("a"));
        assert_eq!(
            slab.remove_if(&first, |_, _| Ok::<_, ()>(())),
            Some(Ok("a"))
        );
        let second = slab.claim().unwrap();
        assert_eq!(index_of(second), index_of(first), "the slot is reused");
        assert_ne!(second, first);
        slab.upsert(second, |_, _| Upsert::Put("b", ()));
        assert_eq!(slab.read(&first, |_, v| *v), None);
        assert_eq!(slab.update(&first, |_, v| *v), None);
        assert_eq!(slab.remove_if(&first, |_, _| Ok::<_, ()>(())), None);
        assert_eq!(slab.read(&second, |_, v| *v), Some("b"));
        assert_eq!(slab.len(), 1);
    }

    #[test]
    fn a_resumed_visit_sees_each_staying_record_once_in_slot_order() {
        let slab: Slab<_> = Slab::new();
        let keys: Vec<u64> = (0..10u32)
            .map(|i| {
                let k = slab.claim().unwrap();
                slab.upsert(k, |_, _| Upsert::Put(i, ()));
                k
            })
            .collect();
        for gone in [1, 4, 9] {
            slab.remove_if(&keys[gone], |_, _| Ok::<_, ()>(()))
                .unwrap()
                .unwrap();
        }
        let (mut seen, mut at, mut visits) = (Vec::new(), Some(0), 0);
        while let Some(start) = at {
            at = slab.visit_from(start, 3, |k, _, v| {
                seen.push((*k, *v));
                true
            });
            visits += 1;
        }
        let kept: Vec<(u64, u32)> = [0, 2, 3, 5, 6, 7, 8].map(|i| (keys[i], i as u32)).into();
        assert_eq!(seen, kept);
        assert_eq!(visits, 4, "10 slots, 3 at a time");
        // Stopped by the visitor: it resumes just after the last record seen.
        let mut first = Vec::new();
        let next = slab.visit_from(0, 10, |_, _, v| {
            first.push(*v);
            first.len() < 2
        });
        assert_eq!((first, next), (vec![0, 2], Some(3)));
        assert_eq!(slab.visit_from(10, 5, |_, _, _| true), None, "past the end");
    }

    #[test]
    fn an_unfilled_claim_goes_back_and_a_filled_one_stays() {
        let slab: Slab<_> = Slab::new();
        let claimed = slab.claim().unwrap();
        slab.unclaim(claimed);
        let again = slab.claim().unwrap();
        assert_eq!(index_of(again), index_of(claimed));
        assert_ne!(again, claimed, "a returned claim's key is spent");
        slab.upsert(again, |_, _| Upsert::Put(7, ()));
        slab.unclaim(again);
        assert_eq!(slab.read(&again, |_, v| *v), Some(7));
        let other = slab.claim().unwrap();
        assert_ne!(index_of(other), index_of(again));
        assert_eq!(slab.slots(), 2);
    }

    #[test]
    fn keys_the_slab_never_issued_find_nothing() {
        let slab: Slab<u8> = Slab::new();
        let key = slab.claim().unwrap();
        slab.upsert(key, |_, _| Upsert::Put(1, ()));
        for stranger in [
            0,
            u64::MAX,
            key_of(index_of(key), 0),
            key_of(index_of(key), u32::MAX),
            key_of(index_of(key) + 1, FIRST_GENERATION),
            key_of(u32::MAX, FIRST_GENERATION),
        ] {
            assert_eq!(slab.read(&stranger, |_, v| *v), None, "{stranger:#x}");
            assert_eq!(slab.remove_if(&stranger, |_, _| Ok::<_, ()>(())), None);
        }
        assert_eq!(slab.read(&key, |_, v| *v), Some(1));
    }

    #[test]
    fn a_slot_out_of_generations_is_retired() {
        let slab: Slab<u8> = Slab::new();
        let key = slab.claim().unwrap();
        {
            let slot = slab.slot(index_of(key)).unwrap();
            slot.cell.lock().set_generation(u32::MAX - 1);
        }
        let key = key_of(index_of(key), u32::MAX - 1);
        slab.upsert(key, |_, _| Upsert::Put(1, ()));
        assert_eq!(slab.remove_if(&key, |_, _| Ok::<_, ()>(())), Some(Ok(1)));
        assert_eq!(slab.read(&key, |_, v| *v), None);
        let next = slab.claim().unwrap();
        assert_ne!(
            index_of(next),
            index_of(key),
            "the spent slot is not reused"
        );
    }

    #[test]
    fn slots_made_stay_at_the_peak_held() {
        let slab: Slab<_> = Slab::new();
        for round in 0..5 {
            let keys: Vec<u64> = (0..3000)
                .map(|i| {
                    let k = slab.claim().unwrap();
                    slab.upsert(k, |_, _| Upsert::Put(i, ()));
                    k
                })
                .collect();
            assert_eq!(slab.len(), 3000);
            let mut seen = 0;
            slab.for_each(|k, _, v| {
                assert_eq!(keys[*v], *k);
                seen += 1;
            });
            assert_eq!(seen, 3000);
            for k in keys {
                assert!(matches!(
                    slab.remove_if(&k, |_, _| Ok::<_, ()>(())),
                    Some(Ok(_))
                ));
            }
            assert_eq!(slab.len(), 0);
            assert_eq!(slab.slots(), 3000, "round {round}");
        }
    }
}
