//! [`Handles`]: the wheel tells a cancelled entry by itself, through an
//! id and a generation per entry (the module docs of [`super`]).

use super::{sealed, Liveness, Wheel};

/// A stable reference to a scheduled entry.
///
/// A handle stays valid until its entry fires or is cancelled; after that
/// every operation with it is a no-op that reports the handle as stale.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    id: u32,
    generation: u32,
}

impl TimerHandle {
    /// A handle that never refers to an entry.
    pub const NONE: TimerHandle = TimerHandle {
        id: u32::MAX,
        generation: 0,
    };

    /// Packs the handle into one word so it can live in an atomic.
    pub fn to_bits(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.id)
    }

    /// Inverse of [`TimerHandle::to_bits`].
    pub fn from_bits(bits: u64) -> Self {
        TimerHandle {
            id: bits as u32,
            generation: (bits >> 32) as u32,
        }
    }
}

/// Entries carry a [`TimerHandle`]; the wheel keeps each id's generation,
/// so a cancel is O(1) and a cancelled entry is known without asking
/// anyone. 8 bytes per entry and 4 per id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handles;

/// The generation of every id, and the ids free for reuse.
#[derive(Default)]
pub struct Ids {
    /// Odd while the id is scheduled, even while it is free.
    gens: Vec<u32>,
    free: Vec<u32>,
}

impl Ids {
    fn release(&mut self, id: u32) {
        let generation = &mut self.gens[id as usize];
        *generation = generation.wrapping_add(1);
        // An id whose generation would wrap is retired for good, so no
        // lingering stale entry can ever match a later generation.
        if *generation < u32::MAX - 1 {
            self.free.push(id);
        }
    }
}

impl sealed::Naming for Handles {
    type Tag = TimerHandle;
    type Handle = TimerHandle;
    type Book = Ids;
    const SELF_CHECKING: bool = true;

    #[inline]
    fn holds(book: &Ids, tag: TimerHandle) -> bool {
        book.gens[tag.id as usize] == tag.generation
    }

    fn fire(book: &mut Ids, tag: TimerHandle) -> TimerHandle {
        book.release(tag.id);
        tag
    }
}

impl Liveness for Handles {}

impl<T: Ord> Wheel<T, Handles> {
    /// A wheel with [`DEFAULT_LEVELS`](super::DEFAULT_LEVELS) levels whose
    /// time starts at `start`.
    pub fn new(start: u64) -> Self {
        Self::with_levels(super::DEFAULT_LEVELS, start)
    }

    /// A wheel with `levels` levels (1..=[`MAX_LEVELS`](super::MAX_LEVELS))
    /// starting at `start`.
    ///
    /// Fewer levels only move far deadlines to the overflow list sooner; tests
    /// use this to exercise the overflow path with small numbers.
    pub fn with_levels(levels: usize, start: u64) -> Self {
        Self::build(levels, start)
    }

    /// Reserves id room for `additional` more entries.
    pub fn reserve(&mut self, additional: usize) {
        self.book.gens.reserve(additional);
    }

    /// Schedules `item` at tick `due`. O(1) amortised.
    pub fn insert(&mut self, item: T, due: u64) -> TimerHandle {
        let ids = &mut self.book;
        let id = match ids.free.pop() {
            Some(id) => id,
            None => {
                let id = u32::try_from(ids.gens.len())
                    .ok()
                    .filter(|&id| id != u32::MAX)
                    .expect("timing wheel exceeds u32::MAX - 1 ids");
                ids.gens.push(0);
                id
            }
        };
        let generation = ids.gens[id as usize] + 1;
        debug_assert!(generation % 2 == 1, "a free id has an even generation");
        ids.gens[id as usize] = generation;
        let handle = TimerHandle { id, generation };
        self.add(item, due, handle);
        self.run_owed(usize::MAX, |_, _| true);
        handle
    }

    /// Whether `handle` refers to a scheduled entry.
    pub fn contains(&self, handle: TimerHandle) -> bool {
        self.book.gens.get(handle.id as usize) == Some(&handle.generation)
            && handle.generation % 2 == 1
    }

    /// Cancels a scheduled entry. O(1) amortised: at most
    /// [`COMPACT_STEP`](super::COMPACT_STEP) entries examined while a
    /// compaction pass runs. Returns `false` for a stale handle.
    pub fn cancel(&mut self, handle: TimerHandle) -> bool {
        if !self.contains(handle) {
            return false;
        }
        self.book.release(handle.id);
        self.note_stale();
        self.run_owed(usize::MAX, |_, _| true);
        true
    }
}
