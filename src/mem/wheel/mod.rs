//! A hierarchical timing wheel over millisecond ticks.
//!
//! The wheel owns *when* things are due, never *what* they are: it stores an
//! item (for the store, a record key) and a due tick, and hands items back from
//! [`Wheel::advance`] once the caller says time has reached them. It never
//! reads a clock; time is always an argument.
//!
//! # Ground rules
//!
//! - **Geometry.** `levels` levels of [`SLOTS`] slots each. A slot at level `L`
//!   spans `64^L` ticks, so level 0 slots are exactly one tick wide and the
//!   whole wheel spans `64^levels` ticks (6 levels: 2^36 ms, about 795 days).
//!   Deadlines further out than that wait in an overflow list and are moved
//!   into the levels when the wheel's top-level window reaches them.
//! - **Placement.** An entry due at `due` while the wheel has processed up to
//!   `elapsed` goes to the level of the highest 6-bit digit in which `due` and
//!   `elapsed` differ, at the slot given by `due`'s digit at that level. So an
//!   entry at level `L` always shares every digit above `L` with `elapsed`,
//!   and level 0 slots hold entries that are due at exactly the slot's tick.
//! - **Occupancy.** `occupied[L]` has bit `s` set iff slot `s` of level `L` is
//!   non-empty. Finding the next due slot is a mask and a `trailing_zeros`
//!   per level, never a walk over empty slots.
//! - **Storage.** The slot table is allocated by the first entry placed in
//!   a slot, so a wheel that never held one costs a few words. Each slot is
//!   a contiguous `Vec` of entries carrying their item, due tick and what
//!   tells them from cancelled ones (their [`Liveness`] tag), so cascading
//!   a slot is a sequential scan and emitting a tick sorts a contiguous
//!   batch. This matters: with a million timers, a design that chases a
//!   pointer per entry pays a cache miss per entry per move. An entry in a
//!   slot keeps only the low 32 bits of its due tick: the bits above are
//!   its slot's digit and `elapsed`'s higher digits, by the placement rule
//!   (hence at most [`MAX_LEVELS`] levels, whose 30 own bits fit).
//! - **Two ways to tell a cancelled entry ([`Liveness`]).** With
//!   [`Handles`] (the default) the wheel knows by itself, as below. With
//!   [`ByKey`] it does not: an entry is just its item and due tick, its
//!   caller says when one went stale ([`Wheel::forget`]), decides each
//!   fired entry and reports it ([`Wheel::settle`]), and answers for each
//!   entry a compaction pass examines ([`Wheel::tidy`]). That is for items
//!   that already name one record for good, and saves the tag and the id
//!   table (ADR 0050).
//! - **Handles and lazy cancellation.** A [`TimerHandle`] is an id plus a
//!   generation. `gens[id]` is odd while the id is scheduled and even while
//!   it is free; an entry in a slot is valid iff its generation equals
//!   `gens[id]`. Cancel is O(1): it bumps the generation and leaves the entry
//!   where it is, to be dropped when its slot is processed. So that stale
//!   entries stay bounded by live ones, a compaction pass starts once stale
//!   entries outnumber live entries (and [`COMPACT_MIN`]) and walks every
//!   list a few entries at a time: each cancel and insert while it runs
//!   examines at most [`COMPACT_STEP`] entries, so no single call holds the
//!   caller's lock for a whole-wheel scan. After every cancel, stale entries
//!   number at most `2 * max(len, COMPACT_MIN)`: a pass that would leave
//!   more (fires can shrink `len` under it) finishes at once. An id whose
//!   generation would wrap is
//!   retired rather than reused, so a stale entry can never be mistaken for
//!   a live one.
//! - **Stale entries under [`ByKey`].** The same pass and steps, run by
//!   [`Wheel::tidy`] (the caller's answers need the caller's locks, so the
//!   wheel never asks inside [`Wheel::schedule`] or [`Wheel::forget`]).
//!   The steps are owed, not run: a caller on a hot path calls
//!   [`Wheel::tidy_urgent`], which runs only the whole pass the hard bound
//!   calls for, and pays the steps with capped [`Wheel::tidy`] calls off
//!   it (a slab table's sweep), since each answer may be a cache miss.
//!   Two kinds of stale entry no pass can find: those fired and not yet
//!   settled, and a forgotten entry whose item was scheduled again at the
//!   same tick (the caller cannot tell the two apart; settling decides
//!   one live, the other stale, whichever order they come in). A pass
//!   that ends leaves those counted as `unfound`; the bounds apply to the
//!   others: after every `tidy` or `tidy_urgent`, stale entries number at
//!   most `unfound + 2 * max(len, COMPACT_MIN)`, and a pass starts only
//!   once the others outnumber the live ones, so each pass is paid for by
//!   as many forgets as before.
//! - **Order.** `advance` returns entries in `(due, item)` order. Within one
//!   tick the batch is sorted by item, so the order is a pure function of the
//!   operations applied, independent of hashing or thread timing.
//! - **Never early, never late.** An entry is returned by the first `advance`
//!   whose `now` is at or past its due tick, and never before.

mod by_key;
mod handles;

pub use by_key::{ByKey, SplitKey};
pub use handles::{Handles, TimerHandle};

/// Number of slots per level; one `u64` occupancy word covers a level.
pub const SLOTS: usize = 64;
const SLOT_BITS: u32 = SLOTS.trailing_zeros();
const _: () = assert!(SLOTS.is_power_of_two() && SLOTS == u64::BITS as usize);

/// Default number of levels: 64^6 ms covers about 795 days before overflow.
pub const DEFAULT_LEVELS: usize = 6;
/// Most levels a wheel may have: 64^6 ms, about 795 days, before the
/// overflow list. An entry in a level keeps only the low 32 bits of its
/// due tick, and below the top level's digit there are 30.
pub const MAX_LEVELS: usize = 6;
const _: () = assert!((MAX_LEVELS - 1) as u32 * SLOT_BITS <= u32::BITS);

/// Stale (cancelled) entries tolerated before compaction, at minimum.
pub const COMPACT_MIN: usize = 1024;

/// Entries a cancel or insert examines while a compaction pass runs.
///
/// Four is enough for a pass started by cancels alone to finish before
/// stale entries pass twice the live ones: a pass starts with `M + 1`
/// stale among at most `2M + 1` held (`M = max(len, COMPACT_MIN)`); after
/// `k` cancels it has examined `4k` entries, of which at most `len` were
/// live, so stale is at most `M + 1 + k - max(0, 4k - len)`, largest at
/// `k = len / 4` (`1.25M + 1`), while `len` is still at least `0.75M`.
pub const COMPACT_STEP: usize = 4;

/// How a wheel tells a scheduled entry from a cancelled one: [`Handles`]
/// or [`ByKey`]. Sealed: the wheel's bookkeeping depends on which.
pub trait Liveness: sealed::Naming {}

pub(crate) mod sealed {
    /// What a [`Liveness`](super::Liveness) gives the wheel.
    pub trait Naming: Sized {
        /// What each entry carries of it.
        type Tag: Copy;
        /// What a fired entry reports of itself.
        type Handle: Copy + std::fmt::Debug + Eq;
        /// The wheel's own records of it.
        type Book: Default;
        /// Whether the wheel tells a cancelled entry by itself (and so
        /// settles every fired entry's count itself).
        const SELF_CHECKING: bool;
        /// Whether an entry with this tag is still scheduled, as far as the
        /// wheel can tell.
        fn holds(book: &Self::Book, tag: Self::Tag) -> bool;
        /// Frees what a fired entry held; what it reports of itself.
        fn fire(book: &mut Self::Book, tag: Self::Tag) -> Self::Handle;
    }
}

/// An entry handed back by [`Wheel::advance`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired<T, L: Liveness = Handles> {
    /// The item that was scheduled.
    pub item: T,
    /// The tick it was due at (always `<= now` of the advance that fired it).
    pub due: u64,
    /// The handle it had, now stale (`()` for a [`ByKey`] wheel).
    pub handle: L::Handle,
}

/// An entry as a list holds it: its item, its tag, and its due tick,
/// whole (a `u64`: [`Entry`], in the overflow and overdue lists) or its
/// low 32 bits (a `u32`: [`Slotted`], in a level's slot, where the rest
/// is the slot's digit and `elapsed`'s higher digits by the placement
/// rule; 4 bytes less when the item and tag align to 4, ADR 0050).
struct Kept<T, Tag, D> {
    item: T,
    due: D,
    tag: Tag,
}

type Entry<T, Tag> = Kept<T, Tag, u64>;
type Slotted<T, Tag> = Kept<T, Tag, u32>;

/// What the bits of a [`Slotted`] entry's due not kept in it are: the
/// due is `high | (low & own)`.
#[derive(Copy, Clone)]
struct Origin {
    high: u64,
    own: u64,
}

impl Origin {
    /// For the lists that keep whole due ticks.
    const WHOLE: Origin = Origin { high: 0, own: 0 };
}

/// A due tick as a list keeps it.
trait Due: Copy {
    fn whole(self, origin: Origin) -> u64;
}

impl Due for u64 {
    #[inline]
    fn whole(self, _: Origin) -> u64 {
        self
    }
}

impl Due for u32 {
    #[inline]
    fn whole(self, origin: Origin) -> u64 {
        origin.high | (u64::from(self) & origin.own)
    }
}

impl<T, Tag, D: Due> Kept<T, Tag, D> {
    /// The whole due tick, given the list's [`Origin`].
    #[inline]
    fn due_at(&self, origin: Origin) -> u64 {
        self.due.whole(origin)
    }
}

/// Where an entry due at some tick belongs.
#[derive(Copy, Clone)]
enum Place {
    Slot(usize),
    Overflow,
    Overdue,
}

/// Slot vectors larger than this are freed after being drained instead of
/// being kept for reuse, so one burst does not pin its memory forever.
const KEEP_CAPACITY_MAX: usize = 256;

type List<T, L> = Vec<Entry<T, <L as sealed::Naming>::Tag>>;
type SlotList<T, L> = Vec<Slotted<T, <L as sealed::Naming>::Tag>>;

/// The hierarchical timing wheel. See the module docs for its ground rules.
pub struct Wheel<T, L: Liveness = Handles> {
    /// `levels * SLOTS` slot vectors, level-major.
    slots: Vec<SlotList<T, L>>,
    overflow: List<T, L>,
    /// A lower bound on the smallest due tick in `overflow` (cancels may
    /// leave it low, which only causes one harmless early re-examination).
    overflow_min_due: u64,
    overdue: List<T, L>,
    occupied: [u64; MAX_LEVELS],
    levels: usize,
    elapsed: u64,
    /// What tells a cancelled entry, as far as the wheel knows.
    book: L::Book,
    len: usize,
    stale: usize,
    /// Stale entries the last finished pass could not find (always 0 for
    /// a self-checking wheel); see the module docs.
    unfound: usize,
    /// Stale entries the pass in progress started with and has not dropped.
    pass_stale: usize,
    /// Entries the pass in progress owes examining: [`COMPACT_STEP`] for
    /// each schedule and forget since it started, less those examined.
    owed: usize,
    /// Whether a whole pass is owed (the hard bound was passed).
    owed_whole: bool,
    /// Where the compaction pass in progress is, if one is.
    compacting: Option<Cursor>,
}

/// A compaction pass's position: list `list` (the slots, level-major, then
/// the overflow list, then the overdue list), from entry `at`.
#[derive(Copy, Clone, Debug)]
struct Cursor {
    list: usize,
    at: usize,
}

impl<T: Ord, L: Liveness> Wheel<T, L> {
    fn build(levels: usize, start: u64) -> Self {
        assert!(
            (1..=MAX_LEVELS).contains(&levels),
            "a wheel needs 1..={MAX_LEVELS} levels, got {levels}"
        );
        Wheel {
            // Allocated by the first entry: an idle wheel costs nothing.
            slots: Vec::new(),
            overflow: Vec::new(),
            overflow_min_due: u64::MAX,
            overdue: Vec::new(),
            occupied: [0; MAX_LEVELS],
            levels,
            elapsed: start,
            book: L::Book::default(),
            len: 0,
            stale: 0,
            unfound: 0,
            pass_stale: 0,
            owed: 0,
            owed_whole: false,
            compacting: None,
        }
    }

    /// Number of scheduled (not fired, not cancelled) entries; for a
    /// [`ByKey`] wheel, fired ones count until they are settled.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Cancelled entries still physically held (for a [`ByKey`] wheel,
    /// also fired ones awaiting [`Wheel::settle`]); see the module docs
    /// for their bound.
    pub fn stale(&self) -> usize {
        self.stale
    }

    /// Stale entries the last finished compaction pass could not find
    /// (module docs); always 0 for a [`Handles`] wheel.
    pub fn unfound(&self) -> usize {
        self.unfound
    }

    /// The tick up to which every due entry has been returned.
    pub fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Returns, in `(due, item)` order, every entry due at or before `now`,
    /// appending them to `out`. A `now` behind the wheel's time is treated as
    /// the wheel's time: the wheel never moves backwards.
    ///
    /// Cost: O(1) per returned entry plus O(levels) per non-empty slot visited
    /// (cascading moves an entry down at most `levels - 1` times in its life),
    /// plus sorting each tick's batch.
    pub fn advance(&mut self, now: u64, out: &mut Vec<Fired<T, L>>) {
        let now = now.max(self.elapsed);
        if !self.overdue.is_empty() {
            let mut batch = std::mem::take(&mut self.overdue);
            self.emit(&mut batch, Origin::WHOLE, out);
            if self.overdue.is_empty() {
                self.overdue = batch;
            }
        }
        while let Some(next) = self.next_event(now) {
            self.elapsed = self.elapsed.max(next.at);
            match next.source {
                Source::Slot { level: 0, slot } => {
                    let mut batch = self.take_slot(0, slot);
                    self.emit(&mut batch, self.origin(slot), out);
                    self.recycle(batch, slot);
                }
                Source::Slot { level, slot } => {
                    let batch = self.take_slot(level, slot);
                    self.relink(batch, level * SLOTS + slot);
                }
                Source::Overflow => {
                    let batch = std::mem::take(&mut self.overflow);
                    self.overflow_min_due = u64::MAX;
                    self.relink_overflow(batch);
                }
            }
        }
        self.elapsed = now;
    }

    /// The earliest tick at which the wheel has work (an entry to fire or a
    /// slot to cascade), if any. Useful for a driver that sleeps until then.
    pub fn next_due(&self) -> Option<u64> {
        if !self.overdue.is_empty() {
            return Some(self.elapsed);
        }
        self.next_event(u64::MAX).map(|n| n.at)
    }

    // ----- internals -------------------------------------------------------

    /// Places a new entry, counted live.
    fn add(&mut self, item: T, due: u64, tag: L::Tag) {
        self.len += 1;
        self.push(Entry { item, due, tag });
        if self.compacting.is_some() {
            self.owed = self.owed.saturating_add(COMPACT_STEP);
        }
    }

    /// Counts one live entry as stale, and what compaction that owes: a
    /// step, or (past the hard bound) a whole pass.
    fn note_stale(&mut self) {
        self.len -= 1;
        self.stale += 1;
        let live = self.len.max(COMPACT_MIN);
        let findable = self.stale - self.unfound;
        if self.compacting.is_none() && findable > live {
            self.start_pass();
        }
        if findable > 2 * live {
            // The hard bound: a whole pass, from the first list (fires
            // shrank `len` under a pass, or, for a [`ByKey`] wheel, the
            // steps owed were not paid in time).
            self.start_pass();
            self.owed_whole = true;
        } else if self.compacting.is_some() {
            self.owed = self.owed.saturating_add(COMPACT_STEP);
        }
    }

    fn start_pass(&mut self) {
        self.compacting = Some(Cursor { list: 0, at: 0 });
        self.pass_stale = self.stale;
    }

    /// Runs a whole pass if one is owed, else examines up to `cap` of the
    /// entries owed; judges entries by `live` as well as by the tag.
    /// Returns whether compaction is still owed.
    #[inline]
    fn run_owed(&mut self, cap: usize, live: impl FnMut(&T, u64) -> bool) -> bool {
        if self.owed == 0 && !self.owed_whole {
            // Nothing owed: the common case, kept to one test.
            return false;
        }
        let budget = if self.owed_whole {
            self.owed_whole = false;
            usize::MAX
        } else {
            self.owed.min(cap)
        };
        self.owed = self.owed.saturating_sub(budget);
        if budget > 0 {
            self.compact_step(budget, live);
        }
        if self.compacting.is_none() {
            self.owed = 0;
        }
        self.owes()
    }

    /// Whether compaction is owed (see [`run_owed`](Self::run_owed)).
    fn owes(&self) -> bool {
        self.owed_whole || (self.owed > 0 && self.compacting.is_some())
    }

    /// `n` stale entries are gone (dropped, or settled by the caller).
    fn drop_stale(&mut self, n: usize) {
        self.stale -= n;
        self.unfound = self.unfound.min(self.stale);
    }

    /// Where an entry due at `due` belongs given the current `elapsed`.
    fn place_for(&self, due: u64) -> Place {
        if due < self.elapsed {
            return Place::Overdue;
        }
        // The highest differing bit decides the level; `| mask` makes entries
        // that differ only inside level 0 land on level 0.
        let differing = (due ^ self.elapsed) | (SLOTS as u64 - 1);
        let level = ((u64::BITS - 1 - differing.leading_zeros()) / SLOT_BITS) as usize;
        if level >= self.levels {
            return Place::Overflow;
        }
        let slot = (due >> (level as u32 * SLOT_BITS)) as usize & (SLOTS - 1);
        Place::Slot(level * SLOTS + slot)
    }

    /// Where the due ticks of slot `index`'s entries get the bits they do
    /// not keep. Right while the slot holds entries: its level's digits
    /// above it are `elapsed`'s until the slot is emptied (module docs).
    fn origin(&self, index: usize) -> Origin {
        let (level, slot) = (index / SLOTS, index % SLOTS);
        let shift = level as u32 * SLOT_BITS;
        let above = shift + SLOT_BITS;
        Origin {
            high: (self.elapsed >> above << above) | ((slot as u64) << shift),
            own: (1u64 << shift) - 1,
        }
    }

    fn push(&mut self, entry: Entry<T, L::Tag>) {
        match self.place_for(entry.due) {
            Place::Slot(index) => {
                if self.slots.is_empty() {
                    self.slots = (0..self.levels * SLOTS).map(|_| Vec::new()).collect();
                }
                self.occupied[index / SLOTS] |= 1 << (index % SLOTS);
                // Truncated on purpose: `origin` gives back the rest.
                let low = entry.due as u32;
                self.slots[index].push(Slotted {
                    item: entry.item,
                    due: low,
                    tag: entry.tag,
                });
            }
            Place::Overflow => {
                self.overflow_min_due = self.overflow_min_due.min(entry.due);
                self.overflow.push(entry);
            }
            Place::Overdue => self.overdue.push(entry),
        }
    }

    fn take_slot(&mut self, level: usize, slot: usize) -> SlotList<T, L> {
        self.occupied[level] &= !(1 << slot);
        std::mem::take(&mut self.slots[level * SLOTS + slot])
    }

    /// Gives a drained slot vector back to slot `index` for reuse, if it is
    /// small and the slot is still empty.
    fn recycle(&mut self, mut batch: SlotList<T, L>, index: usize) {
        if batch.capacity() <= KEEP_CAPACITY_MAX && self.slots[index].is_empty() {
            batch.clear();
            self.slots[index] = batch;
        }
    }

    /// Re-places every valid entry of a cascaded slot relative to the new
    /// `elapsed`; drops stale ones.
    fn relink(&mut self, mut batch: SlotList<T, L>, index: usize) {
        let origin = self.origin(index);
        self.relink_valid(&mut batch, origin);
        self.recycle(batch, index);
    }

    fn relink_overflow(&mut self, mut batch: List<T, L>) {
        self.relink_valid(&mut batch, Origin::WHOLE);
        if self.overflow.capacity() == 0 {
            self.overflow = batch;
        }
    }

    fn relink_valid<D: Due>(&mut self, batch: &mut Vec<Kept<T, L::Tag, D>>, origin: Origin) {
        // With nothing cancelled, or no way to tell, every entry moves:
        // skip the tag check (for handles a random read into `gens`, which
        // dominates at scale).
        let check = self.stale > 0 && L::SELF_CHECKING;
        for entry in batch.drain(..) {
            if check && !L::holds(&self.book, entry.tag) {
                self.drop_stale(1);
                continue;
            }
            self.push(Entry {
                due: entry.due_at(origin),
                item: entry.item,
                tag: entry.tag,
            });
        }
    }

    /// Emits every entry of a batch the wheel holds valid, in `(due, item)`
    /// order, freeing what their tags held.
    fn emit<D: Due>(
        &mut self,
        batch: &mut Vec<Kept<T, L::Tag, D>>,
        origin: Origin,
        out: &mut Vec<Fired<T, L>>,
    ) {
        if L::SELF_CHECKING {
            // Always check, even with nothing stale: the reads are
            // independent of each other, so the CPU overlaps their cache
            // misses, and the writes that free the ids below then hit
            // cache instead of missing one by one (at 10^6 timers the ids'
            // generations are a random walk over 4 MB).
            let before = batch.len();
            batch.retain(|e| L::holds(&self.book, e.tag));
            self.drop_stale(before - batch.len());
            self.len -= batch.len();
        }
        batch
            .sort_unstable_by(|a, b| (a.due_at(origin), &a.item).cmp(&(b.due_at(origin), &b.item)));
        out.reserve(batch.len());
        for entry in batch.drain(..) {
            let due = entry.due_at(origin);
            debug_assert!(
                due <= self.elapsed,
                "entry fired early: due {due}, elapsed {}",
                self.elapsed
            );
            out.push(Fired {
                item: entry.item,
                due,
                handle: L::fire(&mut self.book, entry.tag),
            });
        }
    }

    /// Continues the compaction pass: examines up to `budget` entries from
    /// the cursor on, dropping the stale ones (by their tag, and by `live`),
    /// and ends the pass at the last list or once nothing findable is
    /// stale. Order within a list does not matter (a slot is sorted when it
    /// fires, re-placed when it cascades), so a stale entry is dropped by
    /// `swap_remove`, O(1).
    fn compact_step(&mut self, budget: usize, mut live: impl FnMut(&T, u64) -> bool) {
        let Some(mut cursor) = self.compacting else {
            return;
        };
        let lists = self.slots.len() + 2;
        let mut left = budget;
        while left > 0 && self.stale > self.unfound && cursor.list < lists {
            let slots = self.slots.len();
            let book = &self.book;
            // Empty lists cost no budget: at most `levels * 64 + 2` of them.
            let (held, done, dropped) = match cursor.list {
                i if i < slots => {
                    let origin = self.origin(i);
                    let list = &mut self.slots[i];
                    let dropped = compact_list(list, &mut cursor.at, &mut left, |e| {
                        L::holds(book, e.tag) && live(&e.item, e.due_at(origin))
                    });
                    (list.len(), cursor.at >= list.len(), dropped)
                }
                i => {
                    let list = if i == slots {
                        &mut self.overflow
                    } else {
                        &mut self.overdue
                    };
                    let dropped = compact_list(list, &mut cursor.at, &mut left, |e| {
                        L::holds(book, e.tag) && live(&e.item, e.due)
                    });
                    (list.len(), cursor.at >= list.len(), dropped)
                }
            };
            self.drop_stale(dropped);
            self.pass_stale = self.pass_stale.saturating_sub(dropped);
            if !done {
                break;
            }
            if held == 0 {
                match cursor.list {
                    i if i < slots => self.occupied[i / SLOTS] &= !(1 << (i % SLOTS)),
                    i if i == slots => self.overflow_min_due = u64::MAX,
                    _ => {}
                }
            }
            cursor = Cursor {
                list: cursor.list + 1,
                at: 0,
            };
        }
        if cursor.list >= lists && !L::SELF_CHECKING {
            // What was stale when the pass began and the pass did not
            // find, no pass can yet (module docs); entries forgotten
            // since may lie behind it, and stay findable.
            self.unfound = self.pass_stale.min(self.stale);
        }
        self.compacting = (self.stale > self.unfound && cursor.list < lists).then_some(cursor);
    }

    /// The earliest pending piece of work at or before `limit`.
    ///
    /// Ties prefer the highest level, so a cascade that brings entries down
    /// into tick `t` happens before tick `t`'s level-0 slot is emitted.
    fn next_event(&self, limit: u64) -> Option<Next> {
        let mut best: Option<Next> = None;
        for level in (0..self.levels).rev() {
            let occupied = self.occupied[level];
            if occupied == 0 {
                continue;
            }
            let shift = level as u32 * SLOT_BITS;
            let position = (self.elapsed >> shift) as usize & (SLOTS - 1);
            let ahead = occupied & (u64::MAX << position);
            debug_assert_eq!(
                ahead, occupied,
                "level {level} has slots behind the cursor {position}: {occupied:#066b}"
            );
            if ahead == 0 {
                continue;
            }
            let slot = ahead.trailing_zeros() as usize;
            let span_bits = shift + SLOT_BITS;
            let window = if span_bits >= u64::BITS {
                0
            } else {
                self.elapsed & !((1u64 << span_bits) - 1)
            };
            let start = window + ((slot as u64) << shift);
            let at = start.max(self.elapsed);
            if best.is_none_or(|b| at < b.at) {
                best = Some(Next {
                    at,
                    source: Source::Slot { level, slot },
                });
            }
        }
        if !self.overflow.is_empty() {
            let top_bits = self.levels as u32 * SLOT_BITS;
            let window_start = if top_bits >= u64::BITS {
                0
            } else {
                self.overflow_min_due & !((1u64 << top_bits) - 1)
            };
            let at = window_start.max(self.elapsed);
            if best.is_none_or(|b| at < b.at) {
                best = Some(Next {
                    at,
                    source: Source::Overflow,
                });
            }
        }
        best.filter(|b| b.at <= limit)
    }
}

/// Examines `list` from `at` while `left` lasts, keeping the entries
/// `keep` approves and dropping the others by `swap_remove`; returns how
/// many it dropped.
fn compact_list<E>(
    list: &mut Vec<E>,
    at: &mut usize,
    left: &mut usize,
    mut keep: impl FnMut(&E) -> bool,
) -> usize {
    let mut dropped = 0;
    while *at < list.len() && *left > 0 {
        *left -= 1;
        if keep(&list[*at]) {
            *at += 1;
        } else {
            list.swap_remove(*at);
            dropped += 1;
        }
    }
    dropped
}

#[derive(Copy, Clone)]
struct Next {
    at: u64,
    source: Source,
}

#[derive(Copy, Clone)]
enum Source {
    Slot { level: usize, slot: usize },
    Overflow,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What ADR 0050 counts on: a slab table's level entry is 12 bytes,
    /// a whole one 16; a handle-tagged `u64` entry stays 24.
    #[test]
    fn a_slab_keys_level_entry_is_twelve_bytes() {
        use std::mem::size_of;
        assert_eq!(size_of::<Slotted<SplitKey, ()>>(), 12);
        assert_eq!(size_of::<Entry<SplitKey, ()>>(), 16);
        assert_eq!(size_of::<Slotted<u64, TimerHandle>>(), 24);
    }

    #[test]
    fn a_split_key_orders_and_round_trips_as_its_u64() {
        let keys = [
            0,
            1,
            u32::MAX as u64,
            1 << 32,
            (1 << 32) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for (i, &a) in keys.iter().enumerate() {
            assert_eq!(u64::from(SplitKey::from(a)), a);
            for &b in &keys[i..] {
                assert_eq!(SplitKey::from(a).cmp(&SplitKey::from(b)), a.cmp(&b));
            }
        }
    }
}
