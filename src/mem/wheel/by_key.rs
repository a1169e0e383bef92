//! [`ByKey`]: an entry is its item and its due tick, nothing else; the
//! caller tells a stale one (ADR 0050).

use super::{sealed, Liveness, Wheel};

/// Entries carry nothing but their item and due tick: for items that name
/// one record for good (a slab key, whose slot's generation never comes
/// back), whose record keeps the due tick of its one live entry. The
/// caller counts an entry stale with [`Wheel::forget`], decides every
/// fired entry and reports it with [`Wheel::settle`], and answers for the
/// entries a compaction pass examines in [`Wheel::tidy`]. Saves the
/// handle's 8 bytes per entry and the 4 per id of [`Handles`](super::Handles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByKey;

impl sealed::Naming for ByKey {
    type Tag = ();
    type Handle = ();
    type Book = ();
    const SELF_CHECKING: bool = false;

    #[inline]
    fn holds((): &(), (): ()) -> bool {
        true
    }

    fn fire((): &mut (), (): ()) {}
}

impl Liveness for ByKey {}

impl<T: Ord> Wheel<T, ByKey> {
    /// A [`ByKey`] wheel with [`DEFAULT_LEVELS`](super::DEFAULT_LEVELS)
    /// levels whose time starts at `start`.
    pub fn by_key(start: u64) -> Self {
        Self::by_key_with_levels(super::DEFAULT_LEVELS, start)
    }

    /// A [`ByKey`] wheel with `levels` levels
    /// (1..=[`MAX_LEVELS`](super::MAX_LEVELS)) starting at `start`.
    pub fn by_key_with_levels(levels: usize, start: u64) -> Self {
        Self::build(levels, start)
    }

    /// Schedules `item` at tick `due`. O(1); the compaction it owes runs
    /// at a later [`tidy`](Self::tidy).
    pub fn schedule(&mut self, item: T, due: u64) {
        self.add(item, due, ());
    }

    /// Counts one scheduled entry stale: its item's record left, or
    /// was scheduled again earlier. The entry stays where it is until a
    /// compaction pass drops it or it fires (and is settled stale).
    pub fn forget(&mut self) {
        self.note_stale();
    }

    /// Reports how the caller decided one fired entry: `live` if it was
    /// its record's entry (the record was removed, or scheduled again),
    /// otherwise stale.
    pub fn settle(&mut self, live: bool) {
        if live {
            self.len -= 1;
        } else {
            self.drop_stale(1);
        }
    }

    /// Runs the compaction the schedules and forgets since the last calls
    /// owe: a whole pass if the hard bound was passed, otherwise at most
    /// `cap` entries examined. Asks `live(item, due)` whether each entry it
    /// examines is still its record's; call it with no lock held that
    /// `live` takes. Returns whether compaction is still owed.
    pub fn tidy(&mut self, cap: usize, live: impl FnMut(&T, u64) -> bool) -> bool {
        self.run_owed(cap, live)
    }

    /// Entries the compaction pass in progress is owed examining (a whole
    /// pass owed aside): what [`tidy`](Self::tidy) calls still have to pay.
    pub fn owed(&self) -> usize {
        if self.compacting.is_some() {
            self.owed
        } else {
            0
        }
    }

    /// Runs a whole compaction pass if the hard bound was passed, and
    /// nothing otherwise: for callers on a hot path, who leave the steps
    /// to a [`tidy`](Self::tidy) elsewhere (a slab table's sweep) and
    /// still keep the bound after every call. Returns whether compaction
    /// is still owed.
    pub fn tidy_urgent(&mut self, live: impl FnMut(&T, u64) -> bool) -> bool {
        self.run_owed(0, live)
    }
}

/// A `u64` item kept as two `u32` halves: it aligns to 4 bytes, so a
/// level entry of a wheel of them (item, and the due tick's low 32 bits)
/// is 12 bytes, where a `u64` item would pad it to 16. Orders as the
/// `u64` does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SplitKey {
    // Field order is the order: the high half first.
    high: u32,
    low: u32,
}

impl From<u64> for SplitKey {
    fn from(key: u64) -> Self {
        SplitKey {
            high: (key >> 32) as u32,
            low: key as u32,
        }
    }
}

impl From<SplitKey> for u64 {
    fn from(key: SplitKey) -> Self {
        (u64::from(key.high) << 32) | u64::from(key.low)
    }
}
