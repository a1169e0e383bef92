//! `NameIndex`: a named record's name to its slab slot, read without a
//! lock (ADR 0078).
//!
//! The index is sharded by the name's hash. A shard is an open-addressing
//! table of words, each naming one slot: the slot's index in the low 28
//! bits ([`SLOTS_MAX`]) and a tag of the name's hash above them. A reader
//! loads the shard's `current` word, probes the table with plain loads
//! and hands every slot whose tag matches to its caller, who verifies in
//! the slot, under the slot's own check, that the record there has the
//! name looked for. So an entry is a hint: a stale one (a record removed,
//! its slot reused) or a tag shared by two names costs one look at a
//! slot, never a wrong answer, and a reader writes nothing shared.
//!
//! # Ground rules
//!
//! - **Writers hold the shard's lock** ([`Rung::Names`]) and, holding it,
//!   keep the table exact: an entry names a slot while, and only while,
//!   that slot holds the live record of a name in the shard. The slab
//!   table that owns the index fills a slot before it enters the slot
//!   here, and removes the entry before its slot is emptied.
//! - **Entries move only in a rebuild.** A removal leaves a tombstone,
//!   which a probe passes over; an insertion takes the first empty word
//!   on its probe. Tombstones and growth are cleared by rebuilding the
//!   table in place: the writer marks `current` as rebuilding (with a new
//!   count), clears the table, enters the live entries again and stores
//!   `current` unmarked with the count after. A hit is verified in its
//!   slot, so it stands whatever the reader probed; a miss counts only if
//!   `current` was unmarked and did not move during the probe, and the
//!   reader probes again otherwise (waiting, while the mark stays, for
//!   the rebuild to end: it is the one time a reader waits for a writer).
//! - **Tables grow by segments that are kept, never freed** (as a slab
//!   keeps its slots): a table of `FIRST_WORDS << c` words is the shard's
//!   first `c + 1` segments, and growing makes the next, as large as all
//!   before it. So a reader may probe with any `current` it once loaded,
//!   and a shard keeps one table's words: the sizes it outgrew are part
//!   of it, and churn makes none.
//! - **Bounded.** A table is at most three quarters full, tombstones
//!   counted, and a rebuild leaves it at most five eighths full of live
//!   entries, so it grows by doubling, and one grown by insertions is at
//!   least three eighths full. Removals leave its segments in place: a
//!   shard keeps the words of the largest table it reached.

use crate::base::ids::SLOTS_MAX;
use crate::base::sync::{lock_at, spin_wait, AtomicU64, Mutex, Ordering, Ranked, Rung};
use crossbeam_utils::CachePadded;
use std::hash::Hash;
use std::ops::ControlFlow;
use std::sync::OnceLock;

/// Shards per index: a writer locks one, so two threads creating or
/// removing records of different names rarely meet. One in the model
/// checker, whose models then reach a shard's growth with four names.
const SHARDS: usize = crate::base::sync::sized(16, 1);
/// The words in a shard's first table (and its first segment). Four in
/// the model checker: a removal and a creation fit them without a
/// rebuild, so the models that race those alone explore no rebuild.
const FIRST_WORDS: usize = crate::base::sync::sized(16, 4);
/// Table sizes a shard may use: `FIRST_WORDS << class` words for each
/// class below this, enough for every slot of a slab (a rebuilt table is
/// at most five eighths full). Three in the model checker, whose segments
/// are all made up front (the std one-time cell is not a modelled
/// primitive).
const CLASSES: usize = crate::base::sync::sized(27, 3);
/// A shard's `current` word: the table's class in the low bits, then
/// whether a rebuild is under way, then the count of rebuild steps (two
/// per rebuild: its start and its end).
const CLASS_BITS: u32 = 5;
const REBUILDING: u64 = 1 << CLASS_BITS;
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
const _: () = assert!(FIRST_WORDS.is_power_of_two());
const _: () = assert!(CLASSES <= 1 << CLASS_BITS);
const _: () =
    assert!(crate::base::sync::MODEL || (FIRST_WORDS << (CLASSES - 1)) as u64 >= 2 * SLOTS_MAX);

/// The tag a hash leaves in its entries; its low bits are also where a
/// probe starts, so a table rebuilds from its words alone.
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

fn class_in(current: u64) -> usize {
    (current & (REBUILDING - 1)) as usize
}

/// The words of segment `k`: the first segment's, then as many as all
/// segments before it.
fn segment_len(k: usize) -> usize {
    if k == 0 {
        FIRST_WORDS
    } else {
        FIRST_WORDS << (k - 1)
    }
}

/// Which segment holds a table's word `at`, and where in it.
#[inline]
fn locate(at: usize) -> (usize, usize) {
    let q = at / FIRST_WORDS;
    if q == 0 {
        (0, at)
    } else {
        let k = (usize::BITS - q.leading_zeros()) as usize;
        (k, at - (FIRST_WORDS << (k - 1)))
    }
}

/// A segment of `len` empty words.
fn segment_of(len: usize) -> Box<[AtomicU64]> {
    (0..len).map(|_| AtomicU64::new(EMPTY)).collect()
}

/// A shard's table of one class: its first `class + 1` segments, which
/// exist.
#[derive(Clone, Copy)]
struct Table<'a> {
    segments: &'a [OnceLock<Box<[AtomicU64]>>],
    len: usize,
}

impl<'a> Table<'a> {
    /// Runs `visit` on the words a probe for `tag` visits, in order (every
    /// word once, a segment's run at a time), until it breaks.
    #[inline]
    fn probe<R>(
        self,
        tag: u64,
        mut visit: impl FnMut(&'a AtomicU64) -> ControlFlow<R>,
    ) -> Option<R> {
        let mask = self.len - 1;
        let (mut at, mut left) = (tag as usize & mask, self.len);
        while left > 0 {
            let (k, i) = locate(at);
            let segment = self.segments[k]
                .get()
                .expect("a table's segments are made before it is used");
            // A table ends where its last segment does, so a run to the
            // segment's end stays in the table.
            let run = (segment.len() - i).min(left);
            for word in &segment[i..i + run] {
                if let ControlFlow::Break(r) = visit(word) {
                    return Some(r);
                }
            }
            left -= run;
            at = (at + run) & mask;
        }
        None
    }

    /// The table's words, in order.
    fn words(self) -> impl Iterator<Item = &'a AtomicU64> {
        let last = locate(self.len - 1).0;
        self.segments[..=last].iter().flat_map(|segment| {
            segment
                .get()
                .expect("a table's segments are made before it is used")
                .iter()
        })
    }
}

/// The first empty word a probe for `tag` visits, if any.
fn empty_word(table: Table<'_>, tag: u64) -> Option<&AtomicU64> {
    table.probe(tag, |at| {
        if at.load(Ordering::Relaxed) == EMPTY {
            ControlFlow::Break(at)
        } else {
            ControlFlow::Continue(())
        }
    })
}

/// What a shard's writers count: its table's live entries and
/// tombstones.
#[derive(Default)]
struct Tally {
    live: usize,
    dead: usize,
}

struct Shard {
    writers: Mutex<Tally>,
    /// The table readers probe, and whether it is being rebuilt (see
    /// [`CLASS_BITS`]).
    current: AtomicU64,
    /// The table's segments, each made when a table first needs it and
    /// kept.
    segments: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl Shard {
    fn new() -> Self {
        let segments: Box<[OnceLock<Box<[AtomicU64]>>]> =
            (0..CLASSES).map(|_| OnceLock::new()).collect();
        for (k, segment) in segments.iter().enumerate() {
            if k == 0 || crate::base::sync::MODEL {
                let _ = segment.set(segment_of(segment_len(k)));
            }
        }
        Shard {
            writers: Mutex::new(Tally::default()),
            current: AtomicU64::new(0),
            segments,
        }
    }

    /// The table a `current` word names; its segments were made before
    /// it was named.
    fn table(&self, current: u64) -> Table<'_> {
        Table {
            segments: &self.segments,
            len: FIRST_WORDS << class_in(current),
        }
    }

    /// The words the shard's segments hold.
    #[cfg(all(test, not(relaystore_loom)))]
    fn words_made(&self) -> usize {
        self.segments
            .iter()
            .filter_map(|s| s.get())
            .map(|s| s.len())
            .sum()
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
    /// nothing shared; waits only while a rebuild of the shard runs.
    #[inline]
    pub(crate) fn find<R>(&self, hash: u64, mut at: impl FnMut(u32) -> Option<R>) -> Option<R> {
        let tag = tag_of(hash);
        let shard = self.shard(hash);
        loop {
            let current = shard.current.load(Ordering::Acquire);
            if current & REBUILDING != 0 {
                spin_wait();
                continue;
            }
            let found = shard.table(current).probe(tag, |word| {
                match word.load(Ordering::Acquire) {
                    EMPTY => return ControlFlow::Break(None),
                    w if w & LIVE != 0 && tag_in(w) == tag => {
                        if let Some(found) = at(slot_in(w)) {
                            return ControlFlow::Break(Some(found));
                        }
                    }
                    _ => {}
                }
                ControlFlow::Continue(())
            });
            if let Some(Some(found)) = found {
                return Some(found);
            }
            // A miss counts from a table no rebuild began clearing
            // meanwhile (the words a rebuild stores are `Release`, so a
            // probe that saw one sees the mark stored before them).
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
    /// The table readers probe now; only a writer changes which it is.
    fn table(&self) -> Table<'a> {
        let shard: &'a Shard = self.shard;
        shard.table(shard.current.load(Ordering::Relaxed))
    }

    /// The slot of the hash's entry for which `is` holds (the slot holds
    /// the live record looked for). Exact: the lock is held.
    pub(crate) fn find(&self, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        self.table()
            .probe(self.tag, |word| match word.load(Ordering::Relaxed) {
                EMPTY => ControlFlow::Break(None),
                w if w & LIVE != 0 && tag_in(w) == self.tag && is(slot_in(w)) => {
                    ControlFlow::Break(Some(slot_in(w)))
                }
                _ => ControlFlow::Continue(()),
            })
            .flatten()
    }

    /// Enters `slot` under the hash, after its record is in it. Rebuilds
    /// the table first when this entry would fill it past three quarters.
    pub(crate) fn insert(&mut self, slot: u32) {
        if (self.tally.live + self.tally.dead + 1) * 4 > self.table().len * 3 {
            self.rebuild();
        }
        // Into the first empty word: tombstones stay until a rebuild, so
        // when one comes depends on the counts alone.
        empty_word(self.table(), self.tag)
            .expect("a table is never full")
            .store(word_of(self.tag, slot), Ordering::Release);
        self.tally.live += 1;
    }

    /// Removes the hash's entry for `slot`. `false` if there is none (a
    /// broken invariant the caller reports).
    pub(crate) fn remove(&mut self, slot: u32) -> bool {
        let word = word_of(self.tag, slot);
        let at = self
            .table()
            .probe(self.tag, |at| match at.load(Ordering::Relaxed) {
                EMPTY => ControlFlow::Break(None),
                w if w == word => ControlFlow::Break(Some(at)),
                _ => ControlFlow::Continue(()),
            })
            .flatten();
        let Some(at) = at else {
            return false;
        };
        at.store(TOMBSTONE, Ordering::Release);
        self.tally.live -= 1;
        self.tally.dead += 1;
        true
    }

    /// Rebuilds the table in place, without tombstones, at the size that
    /// leaves it at most five eighths full (making the segments a larger
    /// one needs), between the two stores to `current` that mark the
    /// rebuild's start and end. The words it stores are `Release`, so a
    /// reader that saw one sees the start's mark when it looks again.
    fn rebuild(&mut self) {
        let from = self.table();
        let live: Vec<u64> = from
            .words()
            .map(|w| w.load(Ordering::Relaxed))
            .filter(|w| w & LIVE != 0)
            .collect();
        let wanted = ((live.len() + 1) * 8).div_ceil(5);
        let class = wanted
            .div_ceil(FIRST_WORDS)
            .next_power_of_two()
            .trailing_zeros() as usize;
        for (k, segment) in self.shard.segments[..=class].iter().enumerate() {
            segment.get_or_init(|| segment_of(segment_len(k)));
        }
        let count = self.shard.current.load(Ordering::Relaxed) >> COUNT_SHIFT;
        let class_bits = class as u64;
        let start = (count + 1) << COUNT_SHIFT | REBUILDING | class_bits;
        let end = (count + 2) << COUNT_SHIFT | class_bits;
        let to = self.shard.table(start);
        let early =
            crate::base::faults::active(crate::base::faults::StoreFault::IndexEndMarkedEarly);
        self.shard.current.store(start, Ordering::Relaxed);
        for word in to.words() {
            word.store(EMPTY, Ordering::Release);
        }
        if early {
            // The model checker's broken twin: the rebuild's end is
            // marked before its entries are back.
            self.shard.current.store(end, Ordering::Release);
        }
        for w in live {
            empty_word(to, tag_in(w))
                .expect("a rebuilt table has room for every live entry")
                .store(w, Ordering::Release);
        }
        self.shard.current.store(end, Ordering::Release);
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

    /// Churn at a steady size rebuilds tables of the same size instead of
    /// growing: tombstones never fill a shard.
    #[test]
    fn churn_at_a_steady_size_keeps_the_tables_small() {
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
            .map(|s| s.table(s.current.load(Ordering::Relaxed)).len)
            .max()
            .unwrap();
        assert!(largest <= 4 * FIRST_WORDS, "largest table: {largest} words");
        let made = names.index.shards.iter().map(|s| s.words_made()).max();
        assert!(made <= Some(4 * FIRST_WORDS), "words made: {made:?}");
    }

    /// The words an index keeps, over every shard, against its live
    /// entries: a shard keeps one table, which a rebuild leaves at most
    /// five eighths full and which grows by doubling at three quarters,
    /// so one grown by insertions is at least three eighths full; the
    /// sizes it outgrew and churn at a steady size cost nothing more.
    #[test]
    fn an_index_keeps_one_table_per_shard_through_growth_and_churn() {
        let mut names = Names::new();
        let all: Vec<String> = (0..40_000).map(|i| format!("member-{i}")).collect();
        let kept =
            |names: &Names| -> usize { names.index.shards.iter().map(|s| s.words_made()).sum() };
        for name in &all {
            names.add(name);
        }
        let live = names.index.len();
        assert!(
            kept(&names) * 3 <= live * 8,
            "{} words for {live} entries after growth",
            kept(&names)
        );
        // Churn at a steady size: a quarter leaves and comes back, twice.
        for _ in 0..2 {
            for name in all.iter().step_by(4) {
                names.drop_name(name);
            }
            for name in all.iter().step_by(4) {
                names.add(name);
            }
        }
        assert_eq!(names.index.len(), live);
        assert!(
            kept(&names) * 3 <= live * 8,
            "{} words for {live} entries after churn",
            kept(&names)
        );
        for name in &all {
            assert!(names.lookup(name).is_some(), "{name}");
        }
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

    /// A probe over a table of several segments visits every word once,
    /// in table order from where its tag starts it, wrapping at the end.
    #[test]
    fn a_probe_crosses_segments_in_table_order() {
        let shard = Shard::new();
        for (k, segment) in shard.segments[..4].iter().enumerate() {
            segment.get_or_init(|| segment_of(segment_len(k)));
        }
        let table = shard.table(3);
        assert_eq!(table.len, 8 * FIRST_WORDS);
        let order: Vec<*const AtomicU64> = table.words().map(|w| w as *const _).collect();
        assert_eq!(order.len(), table.len);
        for (at, word) in order.iter().enumerate() {
            let (k, i) = locate(at);
            assert!(std::ptr::eq(*word, &shard.segments[k].get().unwrap()[i]));
        }
        for tag in [
            0,
            1,
            FIRST_WORDS as u64 - 1,
            3 * FIRST_WORDS as u64 + 5,
            u64::MAX,
        ] {
            let start = tag as usize % table.len;
            let mut probed: Vec<*const AtomicU64> = Vec::new();
            let none: Option<()> = table.probe(tag, |w| {
                probed.push(w as *const _);
                ControlFlow::Continue(())
            });
            assert_eq!(none, None);
            let expected: Vec<*const AtomicU64> = (0..table.len)
                .map(|i| order[(start + i) % table.len])
                .collect();
            assert_eq!(probed, expected, "tag {tag}");
        }
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
