//! `NameIndex`: a named record's name to its slab slot, read without a
//! lock (ADR 0078).
//!
//! The index is sharded by the name's hash. A shard is an open-addressing
//! array of words, each naming one slot: the slot's index in the low 28
//! bits ([`SLOTS_MAX`]) and a tag of the name's hash above them. A reader
//! loads the shard's current array, probes it with plain loads and hands
//! every slot whose tag matches to its caller, who verifies in the slot,
//! under the slot's own check, that the record there has the name looked
//! for. So an entry is a hint: a stale one (a record removed, its slot
//! reused) or a tag shared by two names costs one look at a slot, never a
//! wrong answer, and a reader writes nothing shared.
//!
//! # Ground rules
//!
//! - **Writers hold the shard's lock** ([`Rung::Names`]) and, holding it,
//!   keep the array exact: an entry names a slot while, and only while,
//!   that slot holds the live record of a name in the shard. The slab
//!   table that owns the index fills a slot before it enters the slot
//!   here, and removes the entry before its slot is emptied.
//! - **Entries never move within an array.** A removal leaves a
//!   tombstone, which a probe passes over; an insertion takes the first
//!   empty word on its probe. Tombstones and growth are
//!   cleared by rebuilding the live entries into another array and
//!   publishing it: the shard's `current` word names the array readers
//!   probe, with a count of publications.
//! - **Arrays are kept, never freed** (as a slab keeps its slots): each
//!   size has two, made when a rebuild first needs one and reused by
//!   later rebuilds, so a reader may probe any array it once found
//!   current. A hit is verified in its slot, so it is right whatever the
//!   array held; a miss counts only if `current` did not move during the
//!   probe (a rebuild may have been clearing the array the reader
//!   probed), and the reader probes again otherwise. A reader that
//!   missed a record inserted after it loaded `current` overlapped that
//!   insertion, so the read is ordered before it.
//! - **Bounded.** An array is at most three quarters full, tombstones
//!   counted, and a rebuilt one at most half full of live entries. The
//!   kept arrays of the sizes a shard outgrew cost less than its current
//!   pair.

use crate::base::ids::SLOTS_MAX;
use crate::base::sync::{lock_at, AtomicU64, Mutex, Ordering, Ranked, Rung};
use crossbeam_utils::CachePadded;
use std::hash::Hash;
use std::sync::OnceLock;

/// Shards per index: a writer locks one, so two threads creating or
/// removing records of different names rarely meet. One in the model
/// checker, whose models then reach a shard's growth with two names.
const SHARDS: usize = crate::base::sync::sized(16, 1);
/// The words in a shard's first array (and its smallest rebuilt one).
const FIRST_WORDS: usize = crate::base::sync::sized(16, 2);
/// Array sizes a shard may use: `FIRST_WORDS << class` words for each
/// class below this, enough for every slot of a slab (a rebuilt array is
/// at most half full). Three in the model checker, whose arrays are all
/// made up front (the std one-time cell is not a modelled primitive).
const CLASSES: usize = crate::base::sync::sized(27, 3);
/// A shard's `current` word: the array's class in the low bits, then
/// which of the class's two, then the count of publications.
const CLASS_BITS: u32 = 5;
const WHICH_BIT: u64 = 1 << CLASS_BITS;
const COUNT_SHIFT: u32 = CLASS_BITS + 1;

/// A word that names no slot and ends a probe.
const EMPTY: u64 = 0;
/// A word whose entry was removed: a probe goes on past it.
const TOMBSTONE: u64 = 1;
/// Set in every word that names a slot.
const LIVE: u64 = 1 << 63;
/// The slot's index, in the low bits.
const SLOT_BITS: u32 = SLOTS_MAX.trailing_zeros();
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// Bits of the hash kept as the tag, between the slot and [`LIVE`].
const TAG_BITS: u32 = 63 - SLOT_BITS;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
/// The hash's low bits choose the shard; the tag is taken above them.
const SHARD_BITS: u32 = SHARDS.trailing_zeros();

const _: () = assert!(SLOTS_MAX.is_power_of_two() && SHARDS.is_power_of_two());
const _: () = assert!(CLASSES <= 1 << CLASS_BITS);
const _: () =
    assert!(crate::base::sync::MODEL || (FIRST_WORDS << (CLASSES - 1)) as u64 >= 4 * SLOTS_MAX);

/// The tag a hash leaves in its entries; its low bits are also where a
/// probe starts, so an array rebuilds from its words alone.
fn tag_of(hash: u64) -> u64 {
    (hash >> SHARD_BITS) & TAG_MASK
}

fn word_of(tag: u64, slot: u32) -> u64 {
    LIVE | (tag << SLOT_BITS) | u64::from(slot)
}

fn tag_in(word: u64) -> u64 {
    (word >> SLOT_BITS) & TAG_MASK
}

fn slot_in(word: u64) -> u32 {
    (word & SLOT_MASK) as u32
}

/// An array of `len` empty words.
fn array_of(len: usize) -> Box<[AtomicU64]> {
    debug_assert!(len.is_power_of_two());
    (0..len).map(|_| AtomicU64::new(EMPTY)).collect()
}

/// The words a probe for `tag` visits in `words`, in order: every word
/// once.
fn probe(words: &[AtomicU64], tag: u64) -> impl Iterator<Item = &AtomicU64> {
    let mask = words.len() - 1;
    let start = tag as usize & mask;
    (0..words.len()).map(move |i| &words[(start + i) & mask])
}

/// What a shard's writers count: its array's live entries and
/// tombstones.
#[derive(Default)]
struct Tally {
    live: usize,
    dead: usize,
}

/// A size class's two arrays, each made when first needed and kept.
type Pair = [OnceLock<Box<[AtomicU64]>>; 2];

struct Shard {
    writers: Mutex<Tally>,
    /// The array readers probe (see [`CLASS_BITS`]).
    current: AtomicU64,
    /// Each class's two arrays, made when first needed and kept.
    arrays: Box<[Pair]>,
}

impl Shard {
    fn new() -> Self {
        let arrays: Box<[Pair]> = (0..CLASSES)
            .map(|_| [OnceLock::new(), OnceLock::new()])
            .collect();
        for (class, pair) in arrays.iter().enumerate() {
            for array in pair {
                if class == 0 || crate::base::sync::MODEL {
                    let _ = array.set(array_of(FIRST_WORDS << class));
                }
            }
        }
        Shard {
            writers: Mutex::new(Tally::default()),
            current: AtomicU64::new(0),
            arrays,
        }
    }

    /// The array a `current` word names; it was made before it was named.
    fn array(&self, current: u64) -> &[AtomicU64] {
        let class = (current & ((1 << CLASS_BITS) - 1)) as usize;
        let which = usize::from(current & WHICH_BIT != 0);
        self.arrays[class][which]
            .get()
            .expect("an array is made before it is published")
    }
}

/// A sharded index from a name's hash to the slots holding records of
/// that name (see the module's ground rules).
pub(crate) struct NameIndex {
    hasher: ahash::RandomState,
    shards: Box<[CachePadded<Shard>]>,
}

impl NameIndex {
    pub(crate) fn new() -> Self {
        NameIndex {
            // A seed of the process's own (names are chosen by clients);
            // a fixed one in the model checker, whose executions must
            // repeat step for step.
            hasher: if crate::base::sync::MODEL {
                ahash::RandomState::with_seeds(1, 2, 3, 4)
            } else {
                ahash::RandomState::new()
            },
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Shard::new()))
                .collect(),
        }
    }

    /// The hash a name is indexed by: the same for every borrowed form
    /// that hashes alike.
    pub(crate) fn hash<Q: Hash + ?Sized>(&self, name: &Q) -> u64 {
        self.hasher.hash_one(name)
    }

    fn shard(&self, hash: u64) -> &Shard {
        &self.shards[hash as usize & (SHARDS - 1)]
    }

    /// Offers `at` every slot the index holds under `hash`'s tag, in probe
    /// order, until it answers: `at` verifies, in the slot, that the
    /// record there is the one looked for. Takes no lock and writes
    /// nothing shared.
    #[inline]
    pub(crate) fn find<R>(&self, hash: u64, mut at: impl FnMut(u32) -> Option<R>) -> Option<R> {
        let tag = tag_of(hash);
        let shard = self.shard(hash);
        loop {
            let current = shard.current.load(Ordering::Acquire);
            for word in probe(shard.array(current), tag) {
                match word.load(Ordering::Acquire) {
                    EMPTY => break,
                    w if w & LIVE != 0 && tag_in(w) == tag => {
                        if let Some(found) = at(slot_in(w)) {
                            return Some(found);
                        }
                    }
                    _ => {}
                }
            }
            // A miss counts from an array no rebuild replaced meanwhile
            // (the words a rebuild stores are `Release`, so a probe that
            // saw one sees the count it moved).
            if shard.current.load(Ordering::Acquire) == current
                || crate::base::faults::active(crate::base::faults::StoreFault::IndexMissUnchecked)
            {
                return None;
            }
        }
    }

    /// Takes `hash`'s shard's writers' lock, to find, add or remove its
    /// entries exactly.
    pub(crate) fn write(&self, hash: u64) -> Writer<'_> {
        let shard = self.shard(hash);
        Writer {
            tally: lock_at(Rung::Names, &shard.writers),
            shard,
            tag: tag_of(hash),
        }
    }

    /// Live entries over all shards (each shard's count read under its
    /// lock, one at a time).
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| lock_at(Rung::Names, &s.writers).live)
            .sum()
    }
}

/// A shard held by its writers' lock, for one hash.
pub(crate) struct Writer<'a> {
    shard: &'a Shard,
    tally: Ranked<'a, Tally>,
    tag: u64,
}

impl<'a> Writer<'a> {
    /// The array readers probe now; only a writer changes which it is.
    fn words(&self) -> &'a [AtomicU64] {
        let shard: &'a Shard = self.shard;
        shard.array(shard.current.load(Ordering::Relaxed))
    }

    /// The slot of the hash's entry for which `is` holds (the slot holds
    /// the live record looked for). Exact: the lock is held.
    pub(crate) fn find(&self, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        for word in probe(self.words(), self.tag) {
            match word.load(Ordering::Relaxed) {
                EMPTY => return None,
                w if w & LIVE != 0 && tag_in(w) == self.tag && is(slot_in(w)) => {
                    return Some(slot_in(w))
                }
                _ => {}
            }
        }
        None
    }

    /// Enters `slot` under the hash, after its record is in it. Rebuilds
    /// the array first when this entry would fill it past three quarters.
    pub(crate) fn insert(&mut self, slot: u32) {
        if (self.tally.live + self.tally.dead + 1) * 4 > self.words().len() * 3 {
            self.rebuild();
        }
        // Into the first empty word: tombstones stay until a rebuild, so
        // when one comes depends on the counts alone.
        probe(self.words(), self.tag)
            .find(|at| at.load(Ordering::Relaxed) == EMPTY)
            .expect("an array is never full")
            .store(word_of(self.tag, slot), Ordering::Release);
        self.tally.live += 1;
    }

    /// Removes the hash's entry for `slot`. `false` if there is none (a
    /// broken invariant the caller reports).
    pub(crate) fn remove(&mut self, slot: u32) -> bool {
        let word = word_of(self.tag, slot);
        for at in probe(self.words(), self.tag) {
            match at.load(Ordering::Relaxed) {
                EMPTY => return false,
                w if w == word => {
                    at.store(TOMBSTONE, Ordering::Release);
                    self.tally.live -= 1;
                    self.tally.dead += 1;
                    return true;
                }
                _ => {}
            }
        }
        false
    }

    /// Rebuilds the live entries, without tombstones, into an array at
    /// most half full (the class's other array if the size stays), and
    /// publishes it. The words it stores are `Release` (a reader that
    /// probed the array it reuses sees the publication that replaced it).
    fn rebuild(&mut self) {
        let class = (self.tally.live + 1) * 2;
        let class = class
            .div_ceil(FIRST_WORDS)
            .next_power_of_two()
            .trailing_zeros() as u64;
        let current = self.shard.current.load(Ordering::Relaxed);
        let which = if current & ((1 << CLASS_BITS) - 1) == class {
            !current & WHICH_BIT
        } else {
            0
        };
        let next = ((current >> COUNT_SHIFT) + 1) << COUNT_SHIFT | which | class;
        let from = self.shard.array(current);
        let fill = |to: &[AtomicU64]| {
            for word in to {
                word.store(EMPTY, Ordering::Release);
            }
            for w in from.iter().map(|w| w.load(Ordering::Relaxed)) {
                if w & LIVE != 0 {
                    probe(to, tag_in(w))
                        .find(|at| at.load(Ordering::Relaxed) == EMPTY)
                        .expect("a rebuilt array has room for every live entry")
                        .store(w, Ordering::Release);
                }
            }
        };
        let to = self.shard.arrays[class as usize][usize::from(which != 0)]
            .get_or_init(|| array_of(FIRST_WORDS << class));
        if crate::base::faults::active(crate::base::faults::StoreFault::IndexPublishedEarly) {
            // The model checker's broken twin: readers may find the new
            // array before its entries.
            self.shard.current.store(next, Ordering::Release);
            fill(to);
        } else {
            fill(to);
            self.shard.current.store(next, Ordering::Release);
        }
        self.tally.dead = 0;
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    /// An index over a plain list of slots (slot index → name), checked
    /// the way a slab table checks a slot.
    struct Names {
        index: NameIndex,
        slots: Vec<Option<String>>,
    }

    impl Names {
        fn new() -> Self {
            Names {
                index: NameIndex::new(),
                slots: Vec::new(),
            }
        }

        fn lookup(&self, name: &str) -> Option<u32> {
            let hash = self.index.hash(name);
            self.index.find(hash, |slot| {
                (self.slots[slot as usize].as_deref() == Some(name)).then_some(slot)
            })
        }

        fn add(&mut self, name: &str) -> u32 {
            let hash = self.index.hash(name);
            let slot = self.slots.len() as u32;
            self.slots.push(Some(name.to_owned()));
            let mut w = self.index.write(hash);
            assert_eq!(
                w.find(|s| self.slots[s as usize].as_deref() == Some(name)),
                None
            );
            w.insert(slot);
            slot
        }

        fn drop_name(&mut self, name: &str) {
            let hash = self.index.hash(name);
            let mut w = self.index.write(hash);
            let slot = w
                .find(|s| self.slots[s as usize].as_deref() == Some(name))
                .expect("present");
            assert!(w.remove(slot));
            assert!(!w.remove(slot), "an entry is removed once");
            drop(w);
            self.slots[slot as usize] = None;
        }
    }

    #[test]
    fn a_name_is_found_until_it_is_removed_through_growth_and_churn() {
        let mut names = Names::new();
        let all: Vec<String> = (0..2_000).map(|i| format!("room-{i}")).collect();
        for name in &all {
            names.add(name);
        }
        assert_eq!(names.index.len(), all.len());
        for (i, name) in all.iter().enumerate() {
            assert_eq!(names.lookup(name), Some(i as u32), "{name}");
        }
        assert_eq!(names.lookup("room-2000"), None);
        // Churn: every other name leaves, and comes back in a new slot.
        for name in all.iter().step_by(2) {
            names.drop_name(name);
            assert_eq!(names.lookup(name), None);
        }
        for name in all.iter().step_by(2) {
            let slot = names.add(name);
            assert_eq!(names.lookup(name), Some(slot));
        }
        assert_eq!(names.index.len(), all.len());
        for name in &all {
            assert!(names.lookup(name).is_some(), "{name}");
        }
    }

    /// Churn at a steady size rebuilds arrays of the same size instead of
    /// growing: tombstones never fill a shard.
    #[test]
    fn churn_at_a_steady_size_keeps_the_arrays_small() {
        let mut names = Names::new();
        for round in 0..200 {
            for i in 0..50 {
                names.add(&format!("{round}-{i}"));
            }
            for i in 0..50 {
                names.drop_name(&format!("{round}-{i}"));
            }
        }
        assert_eq!(names.index.len(), 0);
        let largest = names
            .index
            .shards
            .iter()
            .map(|s| s.array(s.current.load(Ordering::Relaxed)).len())
            .max()
            .unwrap();
        assert!(largest <= 4 * FIRST_WORDS, "largest array: {largest} words");
    }

    /// Two names whose tags are equal are told apart in the slot: an
    /// entry is a hint, never an answer.
    #[test]
    fn a_shared_tag_costs_a_look_never_a_wrong_answer() {
        let index = NameIndex::new();
        let slots = ["a", "b", "c"];
        let hash = 42;
        {
            let mut w = index.write(hash);
            for slot in 0..3 {
                w.insert(slot);
            }
        }
        for (slot, name) in slots.iter().enumerate() {
            let mut looked = 0;
            let found = index.find(hash, |s| {
                looked += 1;
                (slots[s as usize] == *name).then_some(s)
            });
            assert_eq!(found, Some(slot as u32));
            assert_eq!(looked, slot + 1, "probed in insertion order");
        }
        assert_eq!(index.find(hash, |_| None::<u32>), None);
    }

    #[test]
    fn the_word_keeps_every_slot_and_tag_bit() {
        for (tag, slot) in [(0, 0), (TAG_MASK, (SLOTS_MAX - 1) as u32), (5, 7)] {
            let w = word_of(tag, slot);
            assert_ne!(w, EMPTY);
            assert_ne!(w, TOMBSTONE);
            assert_eq!((tag_in(w), slot_in(w)), (tag, slot));
        }
    }
}
