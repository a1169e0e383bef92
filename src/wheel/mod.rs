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
//! - **Handles.** Entries live in a slab; a [`TimerHandle`] is the slab index
//!   plus a generation that is bumped whenever the node is freed, so a handle
//!   to a fired or cancelled entry is recognised as stale and never touches
//!   the node's next occupant. Insert, cancel and reschedule are O(1).
//! - **Order.** `advance` returns entries in `(due, item)` order. Within one
//!   tick the batch is sorted by item, so the order is a pure function of the
//!   operations applied, independent of hashing or thread timing.
//! - **Never early, never late.** An entry is returned by the first `advance`
//!   whose `now` is at or past its due tick, and never before.

/// Number of slots per level; one `u64` occupancy word covers a level.
pub const SLOTS: usize = 64;
const SLOT_BITS: u32 = SLOTS.trailing_zeros();
const _: () = assert!(SLOTS.is_power_of_two() && SLOTS == u64::BITS as usize);

/// Default number of levels: 64^6 ms covers about 795 days before overflow.
pub const DEFAULT_LEVELS: usize = 6;
/// Most levels a wheel may have; 10 levels of 6 bits cover all of `u64`.
pub const MAX_LEVELS: usize = 10;

/// Sentinel for "no node" in the intrusive lists.
const NIL: u32 = u32::MAX;

/// A stable reference to a scheduled entry.
///
/// A handle stays valid until its entry fires or is cancelled; after that
/// every operation with it is a no-op that reports the handle as stale.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    index: u32,
    generation: u32,
}

impl TimerHandle {
    /// A handle that never refers to an entry.
    pub const NONE: TimerHandle = TimerHandle {
        index: NIL,
        generation: 0,
    };

    /// Packs the handle into one word so it can live in an atomic.
    pub fn to_bits(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    /// Inverse of [`TimerHandle::to_bits`].
    pub fn from_bits(bits: u64) -> Self {
        TimerHandle {
            index: bits as u32,
            generation: (bits >> 32) as u32,
        }
    }
}

/// An entry handed back by [`Wheel::advance`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired<T> {
    /// The item that was scheduled.
    pub item: T,
    /// The tick it was due at (always `<= now` of the advance that fired it).
    pub due: u64,
    /// The handle it had; now stale.
    pub handle: TimerHandle,
}

/// Which list a node is on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Place {
    /// On the free list.
    Free,
    /// In slot `slot` of level `level`.
    Slot { level: u8, slot: u8 },
    /// Due further out than the levels reach.
    Overflow,
    /// Inserted with a due tick the wheel had already passed.
    Overdue,
}

struct Node<T> {
    item: Option<T>,
    due: u64,
    prev: u32,
    next: u32,
    generation: u32,
    place: Place,
}

#[derive(Copy, Clone)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };
}

/// The hierarchical timing wheel. See the module docs for its ground rules.
pub struct Wheel<T> {
    nodes: Vec<Node<T>>,
    free_head: u32,
    /// `levels * SLOTS` slot lists, then nothing else: overflow and overdue
    /// have their own fields so their indices never need arithmetic.
    slots: Vec<List>,
    overflow: List,
    /// A lower bound on the smallest due tick in `overflow` (cancels may
    /// leave it low, which only causes one harmless early re-examination).
    overflow_min_due: u64,
    overdue: List,
    occupied: [u64; MAX_LEVELS],
    levels: usize,
    elapsed: u64,
    len: usize,
    /// Reused scratch buffer for the batch of one tick.
    batch: Vec<u32>,
}

impl<T: Ord> Wheel<T> {
    /// A wheel with [`DEFAULT_LEVELS`] levels whose time starts at `start`.
    pub fn new(start: u64) -> Self {
        Self::with_levels(DEFAULT_LEVELS, start)
    }

    /// A wheel with `levels` levels (1..=[`MAX_LEVELS`]) starting at `start`.
    ///
    /// Fewer levels only move far deadlines to the overflow list sooner; tests
    /// use this to exercise the overflow path with small numbers.
    pub fn with_levels(levels: usize, start: u64) -> Self {
        assert!(
            (1..=MAX_LEVELS).contains(&levels),
            "a wheel needs 1..={MAX_LEVELS} levels, got {levels}"
        );
        Wheel {
            nodes: Vec::new(),
            free_head: NIL,
            slots: vec![List::EMPTY; levels * SLOTS],
            overflow: List::EMPTY,
            overflow_min_due: u64::MAX,
            overdue: List::EMPTY,
            occupied: [0; MAX_LEVELS],
            levels,
            elapsed: start,
            len: 0,
            batch: Vec::new(),
        }
    }

    /// Number of scheduled entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The tick up to which every due entry has been returned.
    pub fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Reserves slab room for `additional` more entries.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    /// Schedules `item` at tick `due`. O(1).
    pub fn insert(&mut self, item: T, due: u64) -> TimerHandle {
        let index = self.alloc(item, due);
        self.link(index);
        self.len += 1;
        TimerHandle {
            index,
            generation: self.nodes[index as usize].generation,
        }
    }

    /// Removes a scheduled entry. O(1). Returns `None` for a stale handle.
    pub fn cancel(&mut self, handle: TimerHandle) -> Option<T> {
        let index = self.resolve(handle)?;
        self.unlink(index);
        self.len -= 1;
        Some(self.free(index))
    }

    /// Moves a scheduled entry to tick `due`. O(1). Returns `false` for a
    /// stale handle. The handle stays the same.
    pub fn reschedule(&mut self, handle: TimerHandle, due: u64) -> bool {
        let Some(index) = self.resolve(handle) else {
            return false;
        };
        self.unlink(index);
        self.nodes[index as usize].due = due;
        self.link(index);
        true
    }

    /// The due tick of a scheduled entry, or `None` for a stale handle.
    pub fn due(&self, handle: TimerHandle) -> Option<u64> {
        self.resolve(handle).map(|i| self.nodes[i as usize].due)
    }

    /// Returns, in `(due, item)` order, every entry due at or before `now`,
    /// appending them to `out`. A `now` behind the wheel's time is treated as
    /// the wheel's time: the wheel never moves backwards.
    ///
    /// Cost: O(1) per returned entry plus O(levels) per non-empty slot visited
    /// (cascading moves an entry down at most `levels - 1` times in its life),
    /// plus sorting each tick's batch by item.
    pub fn advance(&mut self, now: u64, out: &mut Vec<Fired<T>>) {
        let now = now.max(self.elapsed);
        if self.overdue.head != NIL {
            let list = std::mem::replace(&mut self.overdue, List::EMPTY);
            self.emit_list(list, out);
        }
        while let Some(next) = self.next_event(now) {
            self.elapsed = self.elapsed.max(next.at);
            match next.source {
                Source::Slot { level: 0, slot } => {
                    let list = self.take_slot(0, slot);
                    self.emit_list(list, out);
                }
                Source::Slot { level, slot } => {
                    let list = self.take_slot(level, slot);
                    self.relink_all(list);
                }
                Source::Overflow => {
                    let list = std::mem::replace(&mut self.overflow, List::EMPTY);
                    self.overflow_min_due = u64::MAX;
                    self.relink_all(list);
                }
            }
        }
        self.elapsed = now;
    }

    /// The earliest tick at which the wheel has work (an entry to fire or a
    /// slot to cascade), if any. Useful for a driver that sleeps until then.
    pub fn next_due(&self) -> Option<u64> {
        if self.overdue.head != NIL {
            return Some(self.elapsed);
        }
        self.next_event(u64::MAX).map(|n| n.at)
    }

    // ----- internals -------------------------------------------------------

    fn resolve(&self, handle: TimerHandle) -> Option<u32> {
        let node = self.nodes.get(handle.index as usize)?;
        (node.generation == handle.generation && node.place != Place::Free).then_some(handle.index)
    }

    fn alloc(&mut self, item: T, due: u64) -> u32 {
        if self.free_head != NIL {
            let index = self.free_head;
            let node = &mut self.nodes[index as usize];
            self.free_head = node.next;
            node.item = Some(item);
            node.due = due;
            node.prev = NIL;
            node.next = NIL;
            index
        } else {
            let index = u32::try_from(self.nodes.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("timing wheel slab exceeds u32::MAX - 1 entries");
            self.nodes.push(Node {
                item: Some(item),
                due,
                prev: NIL,
                next: NIL,
                generation: 0,
                place: Place::Free,
            });
            index
        }
    }

    fn free(&mut self, index: u32) -> T {
        let node = &mut self.nodes[index as usize];
        node.generation = node.generation.wrapping_add(1);
        node.place = Place::Free;
        node.prev = NIL;
        node.next = self.free_head;
        self.free_head = index;
        node.item
            .take()
            .expect("a scheduled wheel node always holds its item")
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
        Place::Slot {
            level: level as u8,
            slot: slot as u8,
        }
    }

    fn link(&mut self, index: u32) {
        let due = self.nodes[index as usize].due;
        let place = self.place_for(due);
        self.nodes[index as usize].place = place;
        let list = match place {
            Place::Slot { level, slot } => {
                self.occupied[level as usize] |= 1 << slot;
                &mut self.slots[level as usize * SLOTS + slot as usize]
            }
            Place::Overflow => {
                self.overflow_min_due = self.overflow_min_due.min(due);
                &mut self.overflow
            }
            Place::Overdue => &mut self.overdue,
            Place::Free => unreachable!("place_for never returns Free"),
        };
        // Append at the tail; `nodes` is borrowed separately below.
        let tail = list.tail;
        list.tail = index;
        if tail == NIL {
            list.head = index;
        }
        let node = &mut self.nodes[index as usize];
        node.prev = tail;
        node.next = NIL;
        if tail != NIL {
            self.nodes[tail as usize].next = index;
        }
    }

    fn unlink(&mut self, index: u32) {
        let (prev, next, place) = {
            let node = &self.nodes[index as usize];
            (node.prev, node.next, node.place)
        };
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
        let list = match place {
            Place::Slot { level, slot } => &mut self.slots[level as usize * SLOTS + slot as usize],
            Place::Overflow => &mut self.overflow,
            Place::Overdue => &mut self.overdue,
            Place::Free => unreachable!("unlink of a free node"),
        };
        if list.head == index {
            list.head = next;
        }
        if list.tail == index {
            list.tail = prev;
        }
        if let Place::Slot { level, slot } = place {
            if list.head == NIL {
                self.occupied[level as usize] &= !(1 << slot);
            }
        }
    }

    fn take_slot(&mut self, level: usize, slot: usize) -> List {
        self.occupied[level] &= !(1 << slot);
        std::mem::replace(&mut self.slots[level * SLOTS + slot], List::EMPTY)
    }

    /// Re-places every node of a detached list relative to the new `elapsed`.
    fn relink_all(&mut self, list: List) {
        let mut cursor = list.head;
        while cursor != NIL {
            let next = self.nodes[cursor as usize].next;
            self.link(cursor);
            cursor = next;
        }
    }

    /// Frees every node of a detached list and emits its items in
    /// `(due, item)` order.
    fn emit_list(&mut self, list: List, out: &mut Vec<Fired<T>>) {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let mut cursor = list.head;
        while cursor != NIL {
            batch.push(cursor);
            cursor = self.nodes[cursor as usize].next;
        }
        {
            let nodes = &self.nodes;
            batch.sort_unstable_by(|&a, &b| {
                let (a, b) = (&nodes[a as usize], &nodes[b as usize]);
                (a.due, a.item.as_ref()).cmp(&(b.due, b.item.as_ref()))
            });
        }
        out.reserve(batch.len());
        for &index in &batch {
            let generation = self.nodes[index as usize].generation;
            let due = self.nodes[index as usize].due;
            debug_assert!(
                due <= self.elapsed,
                "entry fired early: due {due}, elapsed {}",
                self.elapsed
            );
            let item = self.free(index);
            out.push(Fired {
                item,
                due,
                handle: TimerHandle { index, generation },
            });
        }
        self.len -= batch.len();
        self.batch = batch;
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
        if self.overflow.head != NIL {
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
