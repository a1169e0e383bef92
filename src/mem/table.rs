//! `Table`: one collection of versioned, expiring records.
//!
//! A table joins a [`ShardMap`] of [`Record`]s, a timing [`Wheel`] that knows
//! when each record is due, a [`Counter`] for the collection's ceiling and
//! the store-wide [`Versions`]. Every method takes `now` as an argument; the
//! table never reads a clock.
//!
//! # Ground rules
//!
//! - **Lock order: wheel, then shard.** Creation, removal, sweeping and the
//!   rare renewal that moves a deadline earlier take the wheel lock and then
//!   touch the map. Nothing takes the wheel lock while holding a shard lock.
//!   Renewals that extend a deadline (the common case) take no wheel lock at
//!   all: one shared shard read and one CAS (in a slab table, the slot's
//!   lock and a plain store, ADR 0051).
//! - **Wheel invariant.** Every record has exactly one live wheel entry,
//!   the one its timer word names, and that entry is due no later than the
//!   record's deadline. So the wheel may fire early for a record that was
//!   renewed (the sweep then re-schedules it at its current deadline) but
//!   never late. The word is a handle's bits in a map table and the
//!   entry's due tick in a slab table ([`Timing`], ADR 0050); it is
//!   written only under the wheel shard's lock, and the wheel is never
//!   called under a record's lock (a slab table's wheel reads records
//!   when it compacts).
//! - **Removal re-checks under the lock.** The sweep removes a record only if,
//!   under the shard's write lock, it is still the record the wheel entry
//!   belongs to and it is still expired. A renewal that wrote first (its CAS
//!   won, or it held the slab slot's lock first) is therefore never lost,
//!   and a renewal that comes after finds the record gone.
//! - **Bookkeeping is not state.** Indexes kept inside a record (a
//!   parent's children) change through `modify`, which works on a record
//!   whether or not it is live and does not move its version, so an index
//!   stays exact while its record awaits the sweep.
//! - **Counting.** The ceiling counter is acquired before a record is
//!   inserted and released exactly once when it leaves the map, by whichever
//!   path removes it.

use crate::base::error::{ConflictReason, Error, Result, Scope};
use crate::base::sync::{Arc, AtomicBool, AtomicU64, GivesWay, Ordering, Ranked, Rung};
use crate::base::time::MonoTime;
use crate::mem::quota::{Counter, Reservation};
use crate::mem::record::{renewal, Head, Record, Refusal, Stamp, Versions};
use crate::mem::shard::{ShardMap, Upsert};
use crate::mem::slab::Slab;
use crate::mem::wheel::{ByKey, Fired, Handles, Liveness, SplitKey, TimerHandle, Wheel};
use crossbeam_utils::CachePadded;
use std::borrow::Borrow;
use std::collections::VecDeque;
use std::hash::Hash;

/// A record that left a table, with the stamp it had when it left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed<K, V> {
    /// The record's key.
    pub key: K,
    /// The record's payload.
    pub value: V,
    /// Version and deadline at removal.
    pub stamp: Stamp,
}

/// What [`Table::insert_placed`] answers: the new record's stamp, what
/// was kept of its place, and the expired record it replaced.
pub(crate) type Inserted<P, K, V> = (Stamp, P, Option<Removed<K, V>>);

/// What a sweep hands out for each record it removed: the record alone
/// ([`Removed`]), or with its place (a named record's slot key).
trait Swept<P, K, V> {
    fn of(place: P, removed: Removed<K, V>) -> Self;
    fn removed(&self) -> &Removed<K, V>;
}

impl<P, K, V> Swept<P, K, V> for Removed<K, V> {
    fn of(_: P, removed: Removed<K, V>) -> Self {
        removed
    }
    fn removed(&self) -> &Removed<K, V> {
        self
    }
}

impl<P, K, V> Swept<P, K, V> for (P, Removed<K, V>) {
    fn of(place: P, removed: Removed<K, V>) -> Self {
        (place, removed)
    }
    fn removed(&self) -> &Removed<K, V> {
        &self.1
    }
}

/// How a table's wheel names a record's one entry, and what the record's
/// timer word holds for it: a [`TimerHandle`]'s bits for the map tables
/// (a map key can leave and come back, so only a handle tells its
/// records apart), the entry's due tick for the slab and named tables
/// (their entries name a slot key, which names one record for good;
/// ADR 0050). `K` is the record's place ([`Placed::Place`]). Every method given the wheel runs under the
/// wheel shard's lock.
pub(crate) trait Timing<K>: Liveness + Sized {
    /// What the wheel holds for a place.
    type Item: Ord;
    fn place(item: Self::Item) -> K;
    fn wheel(start: u64) -> Wheel<Self::Item, Self>;
    /// Schedules `key` at `due`; returns the record's new timer word.
    fn schedule(wheel: &mut Wheel<Self::Item, Self>, key: K, due: u64) -> u64;
    /// The entry named by `timer` is no longer its record's: cancels it
    /// (or counts it stale). `false` if the wheel knows it is not held
    /// (it fired and awaits its batch).
    fn unschedule(wheel: &mut Wheel<Self::Item, Self>, timer: u64) -> bool;
    /// Whether a record whose timer word is `timer` may have its entry due
    /// after `due`, so that a deadline moved to `due` needs a new entry.
    fn may_be_later(timer: u64, due: u64) -> bool;
    /// Whether a fired entry (`due`, `handle`) is the entry of a record
    /// whose timer word is `timer`.
    fn names(timer: u64, due: u64, handle: Self::Handle) -> bool;
    /// Compaction entries owed (a whole pass owed aside).
    fn owed(wheel: &Wheel<Self::Item, Self>) -> usize;
    /// Reports the sweep's decision on one fired entry.
    fn settle(wheel: &mut Wheel<Self::Item, Self>, live: bool);
    /// Runs up to `cap` entries of the compaction owed, or a whole pass if
    /// one is owed (`cap` 0: only that); `timer_of(key)` reads a record's
    /// timer word (no record: `None`). Returns whether more is owed.
    fn tidy(
        wheel: &mut Wheel<Self::Item, Self>,
        cap: usize,
        timer_of: impl FnMut(K) -> Option<u64>,
    ) -> bool;
}

impl<K: Ord> Timing<K> for Handles {
    type Item = K;
    fn place(item: K) -> K {
        item
    }
    fn wheel(start: u64) -> Wheel<K, Self> {
        Wheel::new(start)
    }
    fn schedule(wheel: &mut Wheel<Self::Item, Self>, key: K, due: u64) -> u64 {
        wheel.insert(key, due).to_bits()
    }
    fn unschedule(wheel: &mut Wheel<Self::Item, Self>, timer: u64) -> bool {
        wheel.cancel(TimerHandle::from_bits(timer))
    }
    fn may_be_later(_: u64, _: u64) -> bool {
        true
    }
    fn names(timer: u64, _: u64, handle: TimerHandle) -> bool {
        handle.to_bits() == timer
    }
    // The wheel settles and compacts by itself.
    fn owed(_: &Wheel<Self::Item, Self>) -> usize {
        0
    }
    fn settle(_: &mut Wheel<Self::Item, Self>, _: bool) {}
    fn tidy(_: &mut Wheel<Self::Item, Self>, _: usize, _: impl FnMut(K) -> Option<u64>) -> bool {
        false
    }
}

/// A slab table's wheel, holding its keys as [`SplitKey`]s so that a
/// level entry is 12 bytes (ADR 0050).
impl Timing<u64> for ByKey {
    type Item = SplitKey;
    fn place(item: SplitKey) -> u64 {
        u64::from(item)
    }
    fn wheel(start: u64) -> Wheel<SplitKey, Self> {
        Wheel::by_key(start)
    }
    fn schedule(wheel: &mut Wheel<Self::Item, Self>, key: u64, due: u64) -> u64 {
        wheel.schedule(SplitKey::from(key), due);
        due
    }
    fn unschedule(wheel: &mut Wheel<Self::Item, Self>, _: u64) -> bool {
        wheel.forget();
        true
    }
    fn may_be_later(timer: u64, due: u64) -> bool {
        timer > due
    }
    fn names(timer: u64, due: u64, (): ()) -> bool {
        due == timer
    }
    fn owed(wheel: &Wheel<Self::Item, Self>) -> usize {
        wheel.owed()
    }
    fn settle(wheel: &mut Wheel<Self::Item, Self>, live: bool) {
        wheel.settle(live);
    }
    fn tidy(
        wheel: &mut Wheel<Self::Item, Self>,
        cap: usize,
        mut timer_of: impl FnMut(u64) -> Option<u64>,
    ) -> bool {
        wheel.tidy(cap, |&key, due| timer_of(u64::from(key)) == Some(due))
    }
}

/// One shard of a table's wheel.
pub(crate) struct WheelShard<K, L: Timing<K>> {
    /// The wheel, behind a lock its sweep gives way on between batches
    /// (ADR 0022).
    timers: GivesWay<Timers<K, L>>,
    /// A lower bound on the earliest tick this shard's wheel has work at,
    /// so a sweep skips a shard with nothing due without taking its lock.
    /// Lowered by an insert due before it; set exactly by each advance.
    /// Written only under the shard's lock.
    next_due_ms: AtomicU64,
    /// Whether the wheel owes compaction steps, which the sweep pays (a
    /// slab table's: its operations pay only a whole pass, ADR 0050).
    /// Written only under the shard's lock.
    tidy_owed: AtomicBool,
}

impl<K, L: Timing<K>> WheelShard<K, L> {
    /// The shard's lock, for an operation (a creation, a removal, a
    /// deadline moved earlier): a sweep lets it in between its batches.
    fn lock(&self) -> Ranked<'_, Timers<K, L>> {
        self.timers.lock(Rung::Wheel)
    }

    /// The shard's lock, for the sweep, which gives way on it.
    fn hold(&self) -> Ranked<'_, Timers<K, L>> {
        self.timers.hold(Rung::Wheel)
    }

    /// Schedules `item` at `due` (under this shard's lock: `timers`);
    /// returns the record's timer word.
    fn schedule(&self, timers: &mut Timers<K, L>, item: K, due: u64) -> u64 {
        let timer = L::schedule(&mut timers.wheel, item, due);
        // Every writer of the bound holds the lock this insert holds, so
        // it cannot change between this look and the store. Most records
        // are due after the earliest one already scheduled, and leave the
        // word (which every sweep reads) unwritten.
        if due < self.next_due_ms.load(Ordering::Relaxed) {
            self.next_due_ms.store(due, Ordering::Release);
        }
        timer
    }
}

pub(crate) struct Timers<K, L: Timing<K>> {
    pub(crate) wheel: Wheel<L::Item, L>,
    /// Scratch space the wheel's advance fills, reused by every sweep, so
    /// sweeping does not allocate.
    fired: Vec<Fired<L::Item, L>>,
    /// Fired entries a sweep's step left undecided, in order: the next
    /// step takes them first. Taken from the front, so what a mass expiry
    /// leaves is never copied again.
    carried: VecDeque<Fired<L::Item, L>>,
}

/// Fired wheel entries a sweep handles per hold of a wheel shard's lock:
/// with the shard's own advance, the most work a creation or removal can
/// wait behind. One entry per hold in the model-checking build, so the
/// models explore every gap between batches.
pub const SWEEP_BATCH_MAX: usize = crate::base::sync::sized(1024, 1);

/// The most removed records one step of a sweep collects before they are
/// retired (their events sent, their bookkeeping undone): a mass expiry
/// is retired a step at a time, so what the sweep holds stays bounded and
/// the first removals are announced while later ones are still found.
pub const SWEEP_STEP_MAX: usize = 8192;

/// The most room for carried fired entries a wheel shard keeps between
/// sweeps.
const CARRIED_KEPT_MAX: usize = 4 * SWEEP_BATCH_MAX;

/// How many fired entries a sweep decides between two looks at whether an
/// operation waits for the wheel shard's lock, which ends its batch early
/// (a batch held such an operation for up to a millisecond or two).
const SWEEP_CHECK_EVERY: usize = 32;

/// Wheel entries the sweep's compaction examines per hold of a wheel
/// shard's lock (each a read of a slot, for a slab table's wheel).
const COMPACT_PER_HOLD: usize = 4 * SWEEP_BATCH_MAX;

/// Wheel shards per table. A record's timer lives in the shard its key
/// hashes to, so creations and removals of different keys mostly take
/// different locks, and a mass expiry is advanced and swept one shard at a
/// time (each shard's advance moves about 1/8 of the due entries).
pub const WHEEL_SHARDS: usize = 8;

/// Picks a key's wheel shard. Fixed seeds: the choice only spreads lock
/// traffic (a skewed spread costs what one wheel did), and a fixed one
/// keeps runs reproducible.
const SHARD_HASH: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// Why the sweep left a fired record in place.
enum Keep {
    /// The wheel entry no longer belongs to the record under this key.
    Stale,
    /// The record was renewed; re-schedule at this deadline.
    Live(u64),
}

/// Where a table keeps its records: a hash map for keys callers choose,
/// a [`Slab`] for keys the table issues. The same closure rules hold for
/// both (`src/mem/shard.rs`): a closure runs under the record's lock.
/// Records are handed to closures as their [`Head`] and their payload
/// `V`, which a map keeps together in a [`Record`] and a slab keeps apart
/// (the head beside the slot's lock, for reads that take none).
/// What a table's wheel names a record by ([`Storage`]'s records).
pub(crate) trait Placed {
    /// A record's key, or for named records the key of the slot holding
    /// it (a word, where a name is several).
    type Place;
}

impl<K, R> Placed for ShardMap<K, R> {
    type Place = K;
}

impl<V, B> Placed for Slab<V, B> {
    type Place = u64;
}

pub(crate) trait Storage<K, V>: Find<K, V> + Placed<Place: Clone> {
    /// How the table's wheel names a record's entry ([`Timing`]).
    type Timing: Timing<Self::Place>;
    fn with_capacity(capacity: usize) -> Self;
    /// Decides under the record's lock what to do with `key`'s record, or
    /// with its absence; `decide` is told the record's place. `None` when
    /// the key has no record and the storage has no room for one
    /// ([`SLOTS_MAX`](crate::base::ids::SLOTS_MAX) slots), before `decide`
    /// is asked.
    fn upsert<R>(
        &self,
        key: K,
        decide: impl FnOnce(&Self::Place, Option<(&Head, &V)>) -> Upsert<Record<V>, R>,
    ) -> Option<(R, Option<Record<V>>)>;
    /// Removes `key`'s record if `decide`, told its place, approves it
    /// under the record's lock. `None` if the key has no record.
    fn remove_if<E>(
        &self,
        key: &K,
        decide: impl FnOnce(&Self::Place, &Head, &V) -> Result<(), E>,
    ) -> Option<Result<Record<V>, E>>;
    /// [`remove_if`](Self::remove_if) for the record at `place` (as the
    /// wheel names it), with its key. `None` if no record is there.
    fn remove_at<E>(
        &self,
        place: &Self::Place,
        decide: impl FnOnce(&Head, &V) -> Result<(), E>,
    ) -> Option<Result<(K, Record<V>), E>>;
    /// Runs `f` on the head of the record at `place`, under its lock.
    fn head_at<R>(&self, place: &Self::Place, f: impl FnOnce(&Head) -> R) -> Option<R>;
    /// Where `key`'s record is, if it has one.
    fn place_of(&self, key: &K) -> Option<Self::Place>;
    fn len(&self) -> usize;
    fn for_each(&self, f: impl FnMut(&K, &Head, &V));
}

/// Finds a record by `Q`: its key, or a borrowed form of it that hashes
/// and compares the same (a name looked up as `&str`, without building an
/// owned key).
pub(crate) trait Find<Q: ?Sized, V> {
    /// Whether [`read`](Self::read) holds the record exclusively, so that
    /// [`update`](Self::update) costs no more than it (a slab slot's one
    /// lock; a map shard's shared lock is not). A renewal then writes the
    /// record's state word under `update` with a plain store (ADR 0051).
    const EXCLUSIVE: bool;
    /// The kind's words beside the record (`()` for a map's records).
    type Words;
    fn read<R>(&self, key: &Q, f: impl FnOnce(&Head, &Self::Words, &V) -> R) -> Option<R>;
    fn update<R>(&self, key: &Q, f: impl FnOnce(&Head, &Self::Words, &mut V) -> R) -> Option<R>;
}

impl<K: Eq + Hash + Ord + Clone, V> Storage<K, V> for ShardMap<K, Record<V>> {
    type Timing = Handles;
    fn with_capacity(capacity: usize) -> Self {
        ShardMap::with_capacity(capacity)
    }
    fn upsert<R>(
        &self,
        key: K,
        decide: impl FnOnce(&K, Option<(&Head, &V)>) -> Upsert<Record<V>, R>,
    ) -> Option<(R, Option<Record<V>>)> {
        Some(ShardMap::upsert_keyed(self, key, |place, r| {
            decide(place, r.map(|r| (&r.head, &r.value)))
        }))
    }
    fn remove_if<E>(
        &self,
        key: &K,
        decide: impl FnOnce(&K, &Head, &V) -> Result<(), E>,
    ) -> Option<Result<Record<V>, E>> {
        ShardMap::remove_if(self, key, |r| decide(key, &r.head, &r.value))
    }
    fn remove_at<E>(
        &self,
        key: &K,
        decide: impl FnOnce(&Head, &V) -> Result<(), E>,
    ) -> Option<Result<(K, Record<V>), E>> {
        Storage::remove_if(self, key, |_, head, value| decide(head, value))
            .map(|r| r.map(|record| (key.clone(), record)))
    }
    fn head_at<R>(&self, key: &K, f: impl FnOnce(&Head) -> R) -> Option<R> {
        ShardMap::read(self, key, |r| f(&r.head))
    }
    fn place_of(&self, key: &K) -> Option<K> {
        Some(key.clone())
    }
    fn len(&self) -> usize {
        ShardMap::len(self)
    }
    fn for_each(&self, mut f: impl FnMut(&K, &Head, &V)) {
        ShardMap::for_each(self, |k, r| f(k, &r.head, &r.value))
    }
}

impl<K, Q, V> Find<Q, V> for ShardMap<K, Record<V>>
where
    K: Eq + Hash + Borrow<Q>,
    Q: Eq + Hash + ?Sized,
{
    const EXCLUSIVE: bool = false;
    type Words = ();
    #[inline]
    fn read<R>(&self, key: &Q, f: impl FnOnce(&Head, &(), &V) -> R) -> Option<R> {
        ShardMap::read(self, key, |r| f(&r.head, &(), &r.value))
    }
    fn update<R>(&self, key: &Q, f: impl FnOnce(&Head, &(), &mut V) -> R) -> Option<R> {
        ShardMap::update(self, key, |r| f(&r.head, &(), &mut r.value))
    }
}

/// What a slab table keeps beside each slot's lock: the record's head and
/// the kind's own words (`W`: atomics its reads that take no lock need,
/// `()` for a kind with none). Readers read both with the slot's sequence
/// check ([`SlabTable::peek`]).
#[derive(Default)]
pub(crate) struct Beside<W> {
    pub(crate) head: Head,
    pub(crate) words: W,
}

impl<W> Beside<W> {
    /// Puts `record` in the slot these are beside, under its lock, where
    /// `old` (if any) leaves it: the old record's parts go back into it
    /// and the new one's into the words. Returns the payload the slot
    /// keeps, and the old record's head.
    pub(crate) fn put<V>(&self, old: Option<&mut V>, record: Record<V>) -> (V, Option<Head>)
    where
        W: SlotWords<V>,
    {
        let old_head = old.map(|old| {
            self.words.empty(old);
            self.head.copy()
        });
        let Record { head, mut value } = record;
        self.head.set(&head);
        self.words.fill(&head, &mut value);
        (value, old_head)
    }
}

/// A kind's words beside its slab slot: what its reads that take no lock
/// read of a record `V`. The words are the only copy while the record is
/// in its slot: a record entering the slot moves those parts of itself
/// into them, and one leaving takes back those its removal needs (a
/// removed record's attributes, for one, are left behind). Both run under
/// the slot's lock, and store with `Release`.
pub(crate) trait SlotWords<V>: Default + Sync {
    /// Moves `value`'s parts into the words (a record entering its slot
    /// with `head`).
    fn fill(&self, head: &Head, value: &mut V);
    /// Moves back into `value` the parts its removal needs (the record
    /// leaving its slot).
    fn empty(&self, value: &mut V);
}

/// A kind with no words of its own: its reads take the slot's lock.
impl<V> SlotWords<V> for () {
    fn fill(&self, _: &Head, _: &mut V) {}
    fn empty(&self, _: &mut V) {}
}

impl<V, W: SlotWords<V>> Storage<u64, V> for Slab<V, Beside<W>> {
    type Timing = ByKey;
    fn with_capacity(_capacity: usize) -> Self {
        Slab::new()
    }
    fn upsert<R>(
        &self,
        key: u64,
        decide: impl FnOnce(&u64, Option<(&Head, &V)>) -> Upsert<Record<V>, R>,
    ) -> Option<(R, Option<Record<V>>)> {
        let mut old_head = None;
        let (r, replaced) = Slab::upsert(self, key, |b, v| {
            match decide(&key, v.as_deref().map(|v| (&b.head, v))) {
                Upsert::Put(record, r) => {
                    let (value, old) = b.put(v, record);
                    old_head = old;
                    Upsert::Put(value, r)
                }
                Upsert::Keep(r) => Upsert::Keep(r),
            }
        });
        let replaced = replaced.map(|value| Record {
            head: old_head.expect("a replaced record had a head"),
            value,
        });
        Some((r, replaced))
    }
    fn remove_if<E>(
        &self,
        key: &u64,
        decide: impl FnOnce(&u64, &Head, &V) -> Result<(), E>,
    ) -> Option<Result<Record<V>, E>> {
        let mut head = None;
        Slab::remove_if(self, key, |b, v| {
            decide(key, &b.head, v)?;
            head = Some(b.head.copy());
            b.words.empty(v);
            // A slot left without a record reads as dead to a reader
            // that takes no lock (and later as another generation).
            b.head.set(&Head::default());
            Ok(())
        })
        .map(|outcome| {
            outcome.map(|value| Record {
                head: head.take().expect("a removed record had a head"),
                value,
            })
        })
    }
    fn remove_at<E>(
        &self,
        key: &u64,
        decide: impl FnOnce(&Head, &V) -> Result<(), E>,
    ) -> Option<Result<(u64, Record<V>), E>> {
        Storage::remove_if(self, key, |_, head, value| decide(head, value))
            .map(|r| r.map(|record| (*key, record)))
    }
    fn head_at<R>(&self, key: &u64, f: impl FnOnce(&Head) -> R) -> Option<R> {
        Slab::read(self, key, |b, _| f(&b.head))
    }
    fn place_of(&self, key: &u64) -> Option<u64> {
        Some(*key)
    }
    fn len(&self) -> usize {
        Slab::len(self)
    }
    fn for_each(&self, mut f: impl FnMut(&u64, &Head, &V)) {
        Slab::for_each(self, |k, b, v| f(k, &b.head, v))
    }
}

impl<V, W: SlotWords<V>> Find<u64, V> for Slab<V, Beside<W>> {
    const EXCLUSIVE: bool = true;
    type Words = W;
    #[inline]
    fn read<R>(&self, key: &u64, f: impl FnOnce(&Head, &W, &V) -> R) -> Option<R> {
        Slab::read(self, key, |b, v| f(&b.head, &b.words, v))
    }
    #[inline]
    fn update<R>(&self, key: &u64, f: impl FnOnce(&Head, &W, &mut V) -> R) -> Option<R> {
        Slab::update(self, key, |b, v| f(&b.head, &b.words, v))
    }
}

/// A table whose keys it issues itself, from a [`Slab`] (ADR 0036), with
/// the kind's words `W` beside each record's head.
pub(crate) type SlabTable<V, W = ()> = TableOf<u64, V, Slab<V, Beside<W>>>;

/// The table over storage `S`, with the wheel naming that `S` calls for.
/// A table's wheel shards, each on lines of its own.
type Shards<P, L> = Box<[CachePadded<WheelShard<P, L>>]>;

pub(crate) type TableOf<K, V, S> = Table<K, V, S, <S as Storage<K, V>>::Timing>;

pub(crate) struct Table<K, V, S: Placed = ShardMap<K, Record<V>>, L: Timing<S::Place> = Handles> {
    map: S,
    /// The timing wheel, in [`WHEEL_SHARDS`] shards by key; its entries
    /// name records by their places.
    timers: Shards<S::Place, L>,
    ceiling: Counter,
    versions: Arc<Versions>,
    swept_to_ms: AtomicU64,
    records: std::marker::PhantomData<fn() -> (K, V)>,
}

impl<K, V, S, L> Table<K, V, S, L>
where
    K: Eq + Hash + Ord + Clone,
    S: Storage<K, V>,
    L: Timing<S::Place>,
{
    pub(crate) fn new(
        scope: Scope,
        capacity: u64,
        versions: Arc<Versions>,
        start: MonoTime,
    ) -> Self {
        // Start small and grow: a table sized for its ceiling up front would
        // cost every store the memory of its largest possible load.
        let hint = usize::try_from(capacity.min(1 << 10)).unwrap_or(1 << 10);
        Table {
            map: S::with_capacity(hint),
            timers: (0..WHEEL_SHARDS)
                .map(|_| {
                    CachePadded::new(WheelShard {
                        timers: GivesWay::new(Timers {
                            wheel: L::wheel(start.as_millis()),
                            fired: Vec::new(),
                            carried: VecDeque::new(),
                        }),
                        next_due_ms: AtomicU64::new(u64::MAX),
                        tidy_owed: AtomicBool::new(false),
                    })
                })
                .collect(),
            ceiling: Counter::new(scope, capacity),
            versions,
            swept_to_ms: AtomicU64::new(start.as_millis()),
            records: std::marker::PhantomData,
        }
    }

    /// The table's storage, for the reads a kind of storage adds (a named
    /// table's read that takes no lock).
    pub(crate) fn storage(&self) -> &S {
        &self.map
    }

    /// Inserts a record live until `deadline_ms`. A live record under the
    /// key is a [`Error::Conflict`]; an expired one is replaced and returned.
    pub(crate) fn insert(
        &self,
        key: K,
        value: V,
        now: MonoTime,
        deadline_ms: u64,
    ) -> Result<(Stamp, Option<Removed<K, V>>)> {
        self.insert_with(key, |_| value, now, deadline_ms)
    }

    /// [`insert`](Self::insert), building the value from the version the
    /// record gets, inside the same critical section (a lock's fence is its
    /// version, and must be in the record the moment it is visible).
    pub(crate) fn insert_with(
        &self,
        key: K,
        make: impl FnOnce(u64) -> V,
        now: MonoTime,
        deadline_ms: u64,
    ) -> Result<(Stamp, Option<Removed<K, V>>)> {
        let ceiling = self.ceiling.limit();
        self.insert_placed(key, make, now, deadline_ms, ceiling, |_| ())
            .map(|(stamp, (), replaced)| (stamp, replaced))
    }

    /// [`insert_with`](Self::insert_with) against `ceiling` instead of the
    /// table's own limit (for an admission that reads all its limits from
    /// one snapshot of the configuration), also answering what `keep`
    /// takes of the new record's place (a named record's slot key, which
    /// names it for good; an expired record it replaced was in the same
    /// place).
    pub(crate) fn insert_placed<P>(
        &self,
        key: K,
        make: impl FnOnce(u64) -> V,
        now: MonoTime,
        deadline_ms: u64,
        ceiling: u64,
        keep: impl FnOnce(&S::Place) -> P,
    ) -> Result<Inserted<P, K, V>> {
        let reservation = Reservation::acquire_under(&[(&self.ceiling, 1, ceiling)])?;
        let shard = self.timers_of(&key);
        let mut timers = shard.lock();
        let upserted = self.map.upsert(key.clone(), |place, existing| {
            if let Some((old, _)) = existing {
                let state = old.state();
                if state.is_live(now) {
                    return Upsert::Keep(Err(Error::conflict(
                        ConflictReason::NameTaken,
                        old.stamp_of(state).version,
                    )));
                }
                self.versions.retire(old.stamp_of(state).version);
            }
            let version = self.versions.issue();
            let stamp = Stamp {
                version,
                deadline: MonoTime::from_millis(deadline_ms),
            };
            // Scheduled under the record's lock, where its place is known
            // (an entry is only added here; nothing reads records).
            let timer = shard.schedule(&mut timers, place.clone(), deadline_ms);
            Upsert::Put(
                Record::new(version, deadline_ms, timer, make(version)),
                Ok((stamp, keep(place))),
            )
        });
        let Some((outcome, replaced)) = upserted else {
            return Err(Error::CapacityExceeded {
                scope: self.ceiling.scope(),
                limit: crate::base::ids::SLOTS_MAX,
                used: self.map.len() as u64,
            });
        };
        let (stamp, kept) = outcome?;
        reservation.commit();
        let replaced = replaced.map(|old| {
            L::unschedule(&mut timers.wheel, old.timer());
            self.ceiling.release(1);
            Removed {
                stamp: old.stamp(),
                key,
                value: old.value,
            }
        });
        self.tidy(shard, &mut timers, 0);
        Ok((stamp, kept, replaced))
    }

    /// Runs `f` on a live record under a shared shard lock. Crate-internal:
    /// `f` must follow the shard module's closure rules.
    pub(crate) fn read<Q, R>(
        &self,
        key: &Q,
        now: MonoTime,
        f: impl FnOnce(&V, Stamp) -> R,
    ) -> Result<R>
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        self.read_owned(key, now, |_| true, f)
    }

    /// [`read`](Self::read), treating a record that `owned` rejects exactly
    /// like a missing one (`NotFound`, whether or not it is live): for
    /// tables whose key does not carry the tenant.
    pub(crate) fn read_owned<Q, R>(
        &self,
        key: &Q,
        now: MonoTime,
        owned: impl FnOnce(&V) -> bool,
        f: impl FnOnce(&V, Stamp) -> R,
    ) -> Result<R>
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        self.read_words(key, now, owned, |v, _, stamp| f(v, stamp))
    }

    /// [`read_owned`](Self::read_owned) with the kind's words beside the
    /// record: under the record's lock, for what a read that takes none
    /// leaves to it.
    pub(crate) fn read_words<Q, R>(
        &self,
        key: &Q,
        now: MonoTime,
        owned: impl FnOnce(&V) -> bool,
        f: impl FnOnce(&V, &<S as Find<Q, V>>::Words, Stamp) -> R,
    ) -> Result<R>
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        self.map
            .read(key, |h, w, v| {
                let state = h.state();
                if !owned(v) {
                    Err(Error::NotFound)
                } else if state.is_live(now) {
                    Ok(f(v, w, h.stamp_of(state)))
                } else {
                    Err(Error::Expired)
                }
            })
            .unwrap_or(Err(Error::NotFound))
    }

    /// Moves a live record's deadline to `deadline_ms` (an absolute reset),
    /// optionally only at version `expected`.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn renew<Q>(
        &self,
        key: &Q,
        now: MonoTime,
        deadline_ms: u64,
        expected: Option<u64>,
    ) -> Result<Stamp>
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        self.renew_guarded(key, now, deadline_ms, expected, |_, _| Ok(()))
    }

    /// [`renew`](Self::renew), refused with `guard`'s error if `guard`
    /// rejects the record (checked under the same lock as the write: a map
    /// shard's shared lock and a CAS, or a slab slot's lock and a plain
    /// store, ADR 0051; the guard reads the payload, and the stamp only if
    /// its refusal reports a version).
    pub(crate) fn renew_guarded<Q>(
        &self,
        key: &Q,
        now: MonoTime,
        deadline_ms: u64,
        expected: Option<u64>,
        guard: impl Fn(&Head, &V) -> Result<()>,
    ) -> Result<Stamp>
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        // One rebase at most: after it the sequence has its full range again.
        for _ in 0..2 {
            let decide = |current| renewal(now, current, deadline_ms);
            let outcome = if <S as Find<Q, V>>::EXCLUSIVE {
                if crate::base::faults::active(crate::base::faults::StoreFault::RenewalReadsApart) {
                    self.stash_early_read(key);
                }
                self.map.update(key, |h, _, v| {
                    guard(h, v)
                        .and_then(|()| h.transition_mut(expected, decide))
                        .map_err(Refusal::Error)
                })
            } else {
                self.map.read(key, |h, _, v| {
                    guard(h, v).map_err(Refusal::Error)?;
                    h.transition(expected, decide)
                })
            };
            match outcome {
                None => return Err(Error::NotFound),
                Some(Ok((before, after))) => {
                    if after.deadline < before.deadline {
                        self.pull_in(key);
                    }
                    return Ok(after);
                }
                Some(Err(Refusal::Error(e))) => return Err(e),
                Some(Err(Refusal::SeqExhausted)) => {
                    self.map.update(key, |h, _, _| h.rebase());
                }
            }
        }
        unreachable!("a rebased record always has room for one more transition")
    }

    /// After a deadline moved earlier, re-schedules the record's wheel entry
    /// at its current deadline, keeping the wheel invariant (due no later
    /// than the deadline). The deadline is read under the wheel lock, so a
    /// concurrent renewal either happened before (and is seen) or will call
    /// this again after.
    fn pull_in<Q>(&self, key: &Q)
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        let shard = self.timers_of(key);
        let mut timers = shard.lock();
        // Read, then written after the wheel's work: the wheel is never
        // called under a record's lock (its compaction reads records).
        // Every write of a timer word holds this wheel lock, and so does
        // every removal of the record (it stays in its place meanwhile).
        let Some(place) = self.map.place_of(&key.to_owned()) else {
            return;
        };
        let Some((timer, due)) = self
            .map
            .head_at(&place, |h| (h.timer(), h.state().deadline_ms()))
        else {
            return;
        };
        if L::may_be_later(timer, due) && L::unschedule(&mut timers.wheel, timer) {
            let timer = shard.schedule(&mut timers, place.clone(), due);
            self.map.head_at(&place, |h| h.set_timer(timer));
        }
        self.tidy(shard, &mut timers, 0);
    }

    /// Runs up to `cap` entries of the compaction a slab table's wheel
    /// owes, or the whole pass it owes (`cap` 0: only that, as every
    /// operation does; the sweep pays the steps), under the wheel shard's
    /// lock and no record's: the wheel asks the records. Returns whether
    /// more is owed.
    fn tidy(
        &self,
        shard: &WheelShard<S::Place, L>,
        timers: &mut Timers<S::Place, L>,
        cap: usize,
    ) -> bool {
        let owed = L::tidy(&mut timers.wheel, cap, |place| {
            self.map.head_at(&place, |h| h.timer())
        });
        if owed != shard.tidy_owed.load(Ordering::Relaxed) {
            shard.tidy_owed.store(owed, Ordering::Relaxed);
        }
        owed
    }

    /// Changes a live record's payload under the shard's write lock,
    /// optionally only at version `expected`. `f` returns its result and
    /// either `None` (bookkeeping only: the version stays) or
    /// `Some(deadline)` (a transition: the version advances and the
    /// deadline is set). `f` follows the shard module's closure rules.
    pub(crate) fn update<Q, R>(
        &self,
        key: &Q,
        now: MonoTime,
        expected: Option<u64>,
        f: impl FnOnce(&mut V, Stamp) -> Result<(R, Option<u64>)>,
    ) -> Result<(R, Stamp)>
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        self.update_owned(key, now, |_| true, expected, f)
    }

    /// [`update`](Self::update), treating a record that `owned` rejects
    /// exactly like a missing one (see [`read_owned`](Self::read_owned)).
    pub(crate) fn update_owned<Q, R>(
        &self,
        key: &Q,
        now: MonoTime,
        owned: impl FnOnce(&V) -> bool,
        expected: Option<u64>,
        f: impl FnOnce(&mut V, Stamp) -> Result<(R, Option<u64>)>,
    ) -> Result<(R, Stamp)>
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        self.update_words(key, now, owned, expected, |v, _, stamp| f(v, stamp))
    }

    /// [`update_owned`](Self::update_owned) with the kind's words beside
    /// the record, which `f` stores to (`Release`) under the record's lock.
    pub(crate) fn update_words<Q, R>(
        &self,
        key: &Q,
        now: MonoTime,
        owned: impl FnOnce(&V) -> bool,
        expected: Option<u64>,
        f: impl FnOnce(&mut V, &<S as Find<Q, V>>::Words, Stamp) -> Result<(R, Option<u64>)>,
    ) -> Result<(R, Stamp)>
    where
        Q: Hash + ToOwned<Owned = K> + ?Sized,
        S: Find<Q, V>,
    {
        let outcome = self.map.update(key, |h, w, v| {
            let state = h.state();
            let before = h.stamp_of(state);
            if !owned(v) {
                return Err(Error::NotFound);
            }
            if !state.is_live(now) {
                return Err(Error::Expired);
            }
            if expected.is_some_and(|e| e != before.version) {
                return Err(Error::conflict(ConflictReason::Version, before.version));
            }
            let (out, deadline) = f(v, w, before)?;
            let after = match deadline {
                Some(deadline) => h.bump(deadline),
                None => before,
            };
            Ok((out, before, after))
        });
        match outcome {
            None => Err(Error::NotFound),
            Some(Err(e)) => Err(e),
            Some(Ok((out, before, after))) => {
                if after.deadline < before.deadline {
                    self.pull_in(key);
                }
                Ok((out, after))
            }
        }
    }

    /// Changes a record's bookkeeping (not its state: no version change, no
    /// liveness check) under the shard's write lock. For indexes that must
    /// stay exact whether or not their record is live, such as a parent's
    /// list of children. Returns `None` if the key is absent.
    pub(crate) fn modify<Q, R>(&self, key: &Q, f: impl FnOnce(&mut V) -> R) -> Option<R>
    where
        Q: ?Sized,
        S: Find<Q, V>,
    {
        self.map.update(key, |_, _, v| f(v))
    }

    /// Removes a live record, optionally only at version `expected`.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn remove(
        &self,
        key: &K,
        now: MonoTime,
        expected: Option<u64>,
    ) -> Result<(V, Stamp)> {
        self.remove_with(
            key,
            |_, stamp, live| {
                if !live {
                    return Err(Error::Expired);
                }
                if expected.is_some_and(|e| e != stamp.version) {
                    return Err(Error::conflict(ConflictReason::Version, stamp.version));
                }
                Ok(())
            },
            now,
        )
        .map(|r| (r.value, r.stamp))
    }

    /// Removes a record, live or not, if `decide` approves it under the
    /// shard's write lock. `decide` sees the value, the stamp and whether
    /// the record is live at `now`.
    pub(crate) fn remove_with(
        &self,
        key: &K,
        decide: impl FnOnce(&V, Stamp, bool) -> Result<()>,
        now: MonoTime,
    ) -> Result<Removed<K, V>> {
        self.remove_placed(key, decide, now, |_| ())
            .map(|((), removed)| removed)
    }

    /// [`remove_with`](Self::remove_with), also answering what `keep`
    /// takes of the removed record's place.
    pub(crate) fn remove_placed<P>(
        &self,
        key: &K,
        decide: impl FnOnce(&V, Stamp, bool) -> Result<()>,
        now: MonoTime,
        keep: impl FnOnce(&S::Place) -> P,
    ) -> Result<(P, Removed<K, V>)> {
        let shard = self.timers_of(key);
        let mut timers = shard.lock();
        let mut kept = None;
        let verdict = self.map.remove_if(key, |place, h, v| {
            let state = h.state();
            let stamp = h.stamp_of(state);
            decide(v, stamp, state.is_live(now))?;
            self.versions.retire(stamp.version);
            kept = Some(keep(place));
            Ok(())
        });
        match verdict {
            None => Err(Error::NotFound),
            Some(Err(e)) => Err(e),
            Some(Ok(record)) => {
                L::unschedule(&mut timers.wheel, record.timer());
                self.tidy(shard, &mut timers, 0);
                self.ceiling.release(1);
                let removed = Removed {
                    stamp: record.stamp(),
                    key: key.clone(),
                    value: record.value,
                };
                Ok((kept.expect("an approved removal kept its place"), removed))
            }
        }
    }

    /// Advances the wheel to `now` and removes every record that is expired,
    /// appending them to `out` in `(deadline, key)` order. Returns how many
    /// were removed.
    ///
    /// The wheel's shards are swept one at a time, and each shard's fired
    /// entries in batches of at most [`SWEEP_BATCH_MAX`], each under its
    /// own hold of the shard's lock, so a mass expiry delays a creation or
    /// removal by one shard's advance or one batch, not by the whole sweep.
    /// Between batches, a record whose entry fired and awaits its batch has
    /// no wheel entry; every path that meets it then is safe: a removal
    /// removes it anyway (its cancel finds the handle stale; a slab table
    /// counts the entry stale, and the batch settles it so), a creation
    /// under its key clears it as expired, and a renewal that reschedules
    /// it gives it a new timer word, so its batch finds the word changed
    /// and leaves it alone (`Keep::Stale`).
    pub(crate) fn sweep(&self, now: MonoTime, out: &mut Vec<Removed<K, V>>) -> usize {
        let before = out.len();
        let done = self.sweep_out(now, out, usize::MAX);
        debug_assert!(done, "an unbounded step sweeps everything due");
        out.len() - before
    }

    /// One step of a sweep to `now`: like [`sweep`](Self::sweep), but
    /// appends at most `max` removals, each with its record's place, and
    /// answers whether the sweep is done. A step that is not leaves the
    /// fired entries it did not reach for the next step, which the caller
    /// takes (at the same `now`) once it has retired these. Each step's
    /// removals are in `(deadline, key)` order; a sweep of more than
    /// `max` is in that order step by step (deterministic still: the
    /// shards are stepped through in their fixed order).
    pub(crate) fn sweep_placed(
        &self,
        now: MonoTime,
        out: &mut Vec<(S::Place, Removed<K, V>)>,
        max: usize,
    ) -> bool {
        self.sweep_out(now, out, max)
    }

    fn sweep_out<T: Swept<S::Place, K, V>>(
        &self,
        now: MonoTime,
        out: &mut Vec<T>,
        max: usize,
    ) -> bool {
        let before = out.len();
        let mut shards_removing = 0;
        let mut done = true;
        for timers in self.timers.iter() {
            let len = out.len();
            let room = max - (len - before);
            if room == 0 {
                done = false;
                break;
            }
            done &= self.sweep_shard(timers, now, out, room);
            shards_removing += usize::from(out.len() > len);
        }
        // Each shard's removals come in order; merge them into one.
        if shards_removing > 1 {
            out[before..].sort_by(|a, b| {
                let (a, b) = (a.removed(), b.removed());
                (a.stamp.deadline, &a.key).cmp(&(b.stamp.deadline, &b.key))
            });
        }
        if done {
            self.swept_to_ms
                .fetch_max(now.as_millis(), Ordering::AcqRel);
        }
        done
    }

    /// Sweeps one wheel shard to `now`, appending at most `max` removals;
    /// whether it is done.
    fn sweep_shard<T: Swept<S::Place, K, V>>(
        &self,
        shard: &WheelShard<S::Place, L>,
        now: MonoTime,
        out: &mut Vec<T>,
        max: usize,
    ) -> bool {
        // Nothing due: no lock. An insert racing this look is one that
        // finishes after the sweep; the next sweep sees it.
        let done = now.as_millis() < shard.next_due_ms.load(Ordering::Acquire)
            || self.fire_due(shard, now, out, max);
        // The compaction steps a slab table's operations left owed, a
        // bounded number of entries per hold of the lock, and no more than
        // were owed when this sweep came: steps that removals racing it
        // owe wait for the next sweep, so a sweep always ends.
        if !shard.tidy_owed.load(Ordering::Relaxed) {
            return done;
        }
        let mut left = L::owed(&shard.hold().wheel).max(1);
        while left > 0 {
            let cap = left.min(COMPACT_PER_HOLD);
            left -= cap;
            let mut timers = shard.hold();
            if !self.tidy(shard, &mut timers, cap) {
                break;
            }
            drop(timers);
            shard.timers.give_way();
        }
        done
    }

    /// Advances a wheel shard to `now` and decides what fired, in batches,
    /// until `max` records are removed; whether every fired entry was
    /// decided. Those not reached wait, first in line, for the next step.
    fn fire_due<T: Swept<S::Place, K, V>>(
        &self,
        shard: &WheelShard<S::Place, L>,
        now: MonoTime,
        out: &mut Vec<T>,
        max: usize,
    ) -> bool {
        let start = out.len();
        let mut pending = {
            let mut guard = shard.hold();
            let timers = &mut *guard;
            timers.wheel.advance(now.as_millis(), &mut timers.fired);
            let next = timers.wheel.next_due().unwrap_or(u64::MAX);
            shard.next_due_ms.store(next, Ordering::Release);
            if timers.fired.is_empty() && timers.carried.is_empty() {
                return true;
            }
            // What an earlier step left goes first; each fired entry is
            // moved here once (the scratch keeps its room).
            let mut pending = std::mem::take(&mut timers.carried);
            pending.extend(timers.fired.drain(..));
            pending
        };
        while !pending.is_empty() && out.len() - start < max {
            let mut timers = shard.hold();
            #[cfg(all(test, not(relaystore_loom)))]
            tests::at_batch();
            for i in 0..SWEEP_BATCH_MAX {
                let Some(fired) = pending.pop_front() else {
                    break;
                };
                self.sweep_one(fired, now, shard, &mut timers, out);
                if out.len() - start == max {
                    break;
                }
                // An operation waiting for the lock ends the batch early.
                if (i + 1) % SWEEP_CHECK_EVERY == 0 && shard.timers.awaited() {
                    break;
                }
            }
            self.tidy(shard, &mut timers, 0);
            drop(timers);
            shard.timers.give_way();
        }
        if pending.is_empty() {
            // Its room is kept for the next sweep, up to a few batches' (a
            // mass expiry's is given back; the advance's scratch keeps it).
            if pending.capacity() <= CARRIED_KEPT_MAX {
                let mut timers = shard.hold();
                if timers.carried.is_empty() {
                    timers.carried = pending;
                }
            }
            return true;
        }
        // The step is full: what is left waits for the next step, ahead
        // of anything another sweep left meanwhile, and the shard reads
        // as due, so the next step comes back for it.
        let mut timers = shard.hold();
        pending.extend(timers.carried.drain(..));
        timers.carried = pending;
        shard.next_due_ms.store(0, Ordering::Release);
        false
    }

    /// The wheel shard that holds `key`'s timer.
    fn timers_of<Q: Hash + ?Sized>(&self, key: &Q) -> &WheelShard<S::Place, L> {
        let shard = SHARD_HASH.hash_one(key) as usize % WHEEL_SHARDS;
        &self.timers[shard]
    }

    /// Decides one fired entry under the wheel lock: removes its record if
    /// it is expired, reschedules it if it was renewed, skips it if the
    /// entry is no longer the record's.
    fn sweep_one<T: Swept<S::Place, K, V>>(
        &self,
        fired: Fired<L::Item, L>,
        now: MonoTime,
        shard: &WheelShard<S::Place, L>,
        timers: &mut Timers<S::Place, L>,
        out: &mut Vec<T>,
    ) {
        let check_handle =
            !crate::base::faults::active(crate::base::faults::StoreFault::SweepIgnoresHandle);
        let Fired { item, due, handle } = fired;
        let place = L::place(item);
        let verdict = self.map.remove_at(&place, |h, _| {
            if check_handle && !L::names(h.timer(), due, handle) {
                return Err(Keep::Stale);
            }
            let state = h.observed_state();
            if state.is_live(now) {
                return Err(Keep::Live(state.deadline_ms()));
            }
            self.versions.retire(h.stamp_of(state).version);
            Ok(())
        });
        let live = matches!(verdict, Some(Ok(_)) | Some(Err(Keep::Live(_))));
        L::settle(&mut timers.wheel, live);
        match verdict {
            Some(Ok((key, record))) => {
                self.ceiling.release(1);
                let removed = Removed {
                    stamp: record.stamp(),
                    key,
                    value: record.value,
                };
                out.push(T::of(place, removed));
            }
            Some(Err(Keep::Live(deadline_ms))) => {
                let timer = shard.schedule(timers, place.clone(), deadline_ms);
                self.map.head_at(&place, |h| h.set_timer(timer));
            }
            // The record was removed, replaced or rescheduled since its
            // entry fired (between batches): nothing is left to do.
            Some(Err(Keep::Stale)) | None => {}
        }
    }

    /// Test hook for the broken twins: remembers the record's state now,
    /// to be used (stale) by the next decision on it under its lock (the
    /// sweep's, or a slab renewal's).
    pub(crate) fn stash_early_read<Q>(&self, key: &Q)
    where
        Q: ?Sized,
        S: Find<Q, V>,
    {
        self.map.read(key, |h, _, _| h.stash_early_read());
    }

    /// The latest `now` a sweep has completed at.
    pub(crate) fn swept_to(&self) -> MonoTime {
        MonoTime::from_millis(self.swept_to_ms.load(Ordering::Acquire))
    }

    /// Records physically present (live or expired but not yet swept).
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn ceiling(&self) -> &Counter {
        &self.ceiling
    }

    /// Wheel entries; equals `len()` whenever no operation is in flight.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn scheduled(&self) -> usize {
        self.timers.iter().map(|t| t.hold().wheel.len()).sum()
    }

    /// Wheel entries counted stale (cancelled, or for a slab table fired
    /// and not yet settled) that the wheels still hold.
    #[cfg(any(test, relaystore_loom))]
    pub(crate) fn stale_timers(&self) -> usize {
        self.timers.iter().map(|t| t.hold().wheel.stale()).sum()
    }

    /// The wheel shard of `key`, held, for tests that corrupt it on
    /// purpose.
    #[cfg(test)]
    pub(crate) fn timers_for_audit(&self, key: &K) -> Ranked<'_, Timers<S::Place, L>> {
        self.timers_of(key).hold()
    }

    /// Visits every record (live or not) with its current stamp.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&K, &V, Stamp)) {
        self.map.for_each(|k, h, v| f(k, v, h.stamp()));
    }
}

/// A claimed slab key, given back when dropped unless kept: on a failed
/// creation and on a panic inside one alike.
struct Claim<'a, V, B: Default> {
    slab: &'a Slab<V, B>,
    key: u64,
    kept: bool,
}

impl<V, B: Default> Drop for Claim<'_, V, B> {
    fn drop(&mut self) {
        if !self.kept {
            self.slab.unclaim(self.key);
        }
    }
}

impl<V, W: SlotWords<V>> SlabTable<V, W> {
    /// Issues the key of a new record and runs `make` with it (which
    /// inserts under it); if `make` fails or panics, the key goes back
    /// unused (a record `make` inserted and then took back gave its slot
    /// back already). The one way a slab table's key is issued.
    pub(crate) fn with_key<R>(&self, make: impl FnOnce(u64) -> Result<R>) -> Result<R> {
        let key = self.map.claim().ok_or_else(|| Error::CapacityExceeded {
            scope: self.ceiling.scope(),
            limit: crate::base::ids::SLOTS_MAX,
            used: self.map.len() as u64,
        })?;
        let mut claim = Claim {
            slab: &self.map,
            key,
            kept: false,
        };
        let made = make(key);
        claim.kept = made.is_ok();
        made
    }

    /// Visits records with their stamps in slot order from slot `start`
    /// ([`Slab::visit_from`]): the slot to resume at, or `None` at the end.
    pub(crate) fn visit_from(
        &self,
        start: u32,
        max_slots: u32,
        mut f: impl FnMut(&u64, &V, &W, Stamp) -> bool,
    ) -> Option<u32> {
        self.map.visit_from(start, max_slots, |k, b, v| {
            f(k, v, &b.words, b.head.stamp())
        })
    }

    /// Reads `key`'s record's head and the kind's words beside its slot
    /// without taking the slot's lock ([`Slab::peek`]): `f` gets them
    /// from a moment no write overlapped, and may run more than once, so
    /// it must only load. `None` when no record is under `key` (its slot
    /// moved on, or holds none); a record there may be expired.
    #[inline]
    pub(crate) fn peek<R>(&self, key: &u64, mut f: impl FnMut(&Head, &W) -> R) -> Option<R> {
        self.map
            .peek(key, |b| {
                let state = b.head.state();
                // A slot without a record keeps a dead head (deadline 0).
                (state.deadline_ms() != 0).then(|| f(&b.head, &b.words))
            })
            .flatten()
    }

    /// The word of `key`'s slot ([`Slab::word`]).
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn word(&self, key: u64) -> Option<u64> {
        self.map.word(key)
    }

    /// Slots the table's slab has made (held, free or claimed).
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn slots(&self) -> u64 {
        self.map.slots()
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    fn slab_table() -> SlabTable<u32> {
        Table::new(
            Scope::Named("test"),
            16,
            Arc::new(Versions::new()),
            MonoTime::ZERO,
        )
    }

    /// A record created at 0, live until `deadline_ms`; its key.
    fn create(t: &SlabTable<u32>, deadline_ms: u64) -> u64 {
        t.with_key(|key| t.insert(key, 7, MonoTime::ZERO, deadline_ms).map(|_| key))
            .unwrap()
    }

    fn held(t: &SlabTable<u32>) -> (usize, usize, usize) {
        (t.len(), t.scheduled(), t.stale_timers())
    }

    std::thread_local! {
        /// What a sweep on this thread runs at the start of each batch,
        /// under the wheel shard's lock ([`at_batch`]).
        static AT_BATCH: std::cell::RefCell<Option<Box<dyn FnMut()>>> =
            std::cell::RefCell::new(None);
    }

    /// Runs this thread's batch hook, if a test set one.
    pub(super) fn at_batch() {
        AT_BATCH.with(|hook| {
            if let Some(hook) = hook.borrow_mut().as_mut() {
                hook();
            }
        });
    }

    /// A creation that waits for a wheel shard's lock while a sweep of
    /// many records of that shard holds it is let in at the sweep's next
    /// batch, not after the shard's last: the sweep gives the lock back
    /// between batches and waits for the waiters to take it. (Before, the
    /// sweep took the lock back at once and kept it in practice, and a
    /// mass expiry held creations for the whole of a shard's sweep.)
    ///
    /// The sweep here waits for the waiter without its bound
    /// ([`GIVE_WAY_BOUND`](crate::base::sync::GIVE_WAY_BOUND)), so a busy
    /// machine that is slow to wake the waiter changes nothing: the
    /// waiter has had the lock by the second batch, or the sweep did not
    /// give it way.
    #[test]
    fn a_creation_waiting_for_a_shard_is_let_in_between_a_sweeps_batches() {
        let n = 64 * SWEEP_BATCH_MAX;
        let t: Arc<SlabTable<u32>> = Arc::new(Table::new(
            Scope::Named("test"),
            n as u64 + 16,
            Arc::new(Versions::new()),
            MonoTime::ZERO,
        ));
        let keys: Vec<u64> = (0..n).map(|_| create(&t, 1)).collect();
        let in_first = |t: &SlabTable<u32>, k: &u64| std::ptr::eq(t.timers_of(k), &*t.timers[0]);
        let first = keys.iter().filter(|k| in_first(&t, k)).count();
        assert!(
            first > 4 * SWEEP_BATCH_MAX,
            "{first} records in the first shard"
        );
        // The creator, once told, creates a record in the shard the sweep
        // takes first.
        let (go, told) = std::sync::mpsc::channel::<()>();
        let creator = std::thread::spawn({
            let t = t.clone();
            move || {
                told.recv().expect("told to create");
                loop {
                    let made = t.with_key(|key| match in_first(&t, &key) {
                        true => t.insert(key, 7, MonoTime::ZERO, 100),
                        false => Err(Error::NotFound),
                    });
                    if made.is_ok() {
                        return;
                    }
                }
            }
        });
        // In the sweep's first batch, under the first shard's lock, the
        // creator starts, and the batch goes on once it waits for the
        // lock. At the second batch's start, under the lock again, the
        // hook notes how many waiters have had the lock since the first.
        let mut go = Some(go);
        let (shard, let_in) = (t.clone(), Arc::new(std::sync::Mutex::new(Vec::new())));
        let seen = let_in.clone();
        AT_BATCH.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                let lock = &shard.timers[0].timers;
                if let Some(go) = go.take() {
                    go.send(()).expect("the creator");
                    while lock.waiting() == 0 {
                        std::thread::yield_now();
                    }
                }
                seen.lock().unwrap().push(lock.let_in());
            }));
        });
        crate::base::sync::GIVE_WAY_BOUND.with(|b| b.set(Some(std::time::Duration::from_secs(60))));
        assert_eq!(t.sweep(MonoTime::from_millis(2), &mut Vec::new()), n);
        crate::base::sync::GIVE_WAY_BOUND.with(|b| b.set(None));
        AT_BATCH.with(|hook| hook.borrow_mut().take());
        creator.join().expect("the creator");
        let let_in = let_in.lock().unwrap();
        assert!(let_in.len() > 4, "{} batches", let_in.len());
        assert_eq!(
            let_in[1] - let_in[0],
            1,
            "the waiting creation had not had the lock by the sweep's second batch"
        );
        assert_eq!(t.len(), 1);
    }

    /// A slab record's deadline moved earlier, then back to the tick its
    /// first entry is due at, before the earlier entry fires: the sweep
    /// reschedules it at that tick, beside its forgotten entry (the two
    /// are the same key and due). At that tick the record leaves once,
    /// one entry settles live and the other stale, and nothing is left.
    #[test]
    fn a_slab_record_rescheduled_beside_its_forgotten_entry_leaves_once() {
        let t = slab_table();
        let at = MonoTime::from_millis;
        let key = create(&t, 10_000);
        t.renew(&key, at(0), 1_000, None).unwrap(); // pulled in: a new entry
        assert_eq!(held(&t), (1, 1, 1), "records, live entries, stale ones");
        t.renew(&key, at(500), 10_000, None).unwrap(); // extended: no wheel work
        let mut out = Vec::new();
        assert_eq!(t.sweep(at(1_000), &mut out), 0, "renewed, not expired");
        assert_eq!(held(&t), (1, 1, 1));
        assert_eq!(t.sweep(at(9_999), &mut out), 0);
        assert_eq!(t.sweep(at(10_000), &mut out), 1);
        assert_eq!(out[0].key, key);
        assert_eq!(held(&t), (0, 0, 0));
    }

    /// A slab record pulled in and then extended past its first entry:
    /// when that forgotten entry fires, the record (live, its timer word
    /// elsewhere) disowns it; it settles stale and schedules nothing.
    #[test]
    fn a_slab_records_forgotten_entry_is_disowned_when_it_fires() {
        let t = slab_table();
        let at = MonoTime::from_millis;
        let key = create(&t, 10_000);
        t.renew(&key, at(0), 1_000, None).unwrap();
        t.renew(&key, at(500), 20_000, None).unwrap();
        let mut out = Vec::new();
        assert_eq!(t.sweep(at(1_000), &mut out), 0);
        assert_eq!(held(&t), (1, 1, 1));
        assert_eq!(t.sweep(at(10_000), &mut out), 0);
        assert_eq!(held(&t), (1, 1, 0), "the forgotten entry settled stale");
        assert_eq!(t.sweep(at(20_000), &mut out), 1);
        assert_eq!(held(&t), (0, 0, 0));
    }

    /// A slab table's removals leave the compaction steps they owe to the
    /// sweep, which pays them even with nothing due.
    #[test]
    fn a_slab_tables_sweep_pays_the_compaction_its_removals_owe() {
        let t: SlabTable<u32> = Table::new(
            Scope::Named("test"),
            16_000,
            Arc::new(Versions::new()),
            MonoTime::ZERO,
        );
        let at = MonoTime::from_millis;
        let keys: Vec<u64> = (0..16_000).map(|i| create(&t, 60_000 + i)).collect();
        // About 1,500 stale entries and 500 live ones in each of the eight
        // wheel shards: past the soft bound (1,024), short of the hard one
        // (2,048). The removals examined nothing.
        for key in &keys[..12_000] {
            t.remove(key, at(1), None).unwrap();
        }
        assert_eq!(held(&t), (4_000, 4_000, 12_000));
        let mut out = Vec::new();
        assert_eq!(t.sweep(at(2), &mut out), 0);
        let (records, live, stale) = held(&t);
        assert_eq!((records, live), (4_000, 4_000));
        assert!(
            stale < 12_000,
            "the sweep paid no compaction: {stale} stale"
        );
    }

    /// A removed slab record's entry is only counted stale; it fires, or a
    /// compaction pass asks the slot and drops it.
    #[test]
    fn a_removed_slab_records_entry_settles_stale() {
        let t = slab_table();
        let at = MonoTime::from_millis;
        let key = create(&t, 5_000);
        t.remove(&key, at(10), None).unwrap();
        assert_eq!(held(&t), (0, 0, 1));
        let mut out = Vec::new();
        assert_eq!(t.sweep(at(5_000), &mut out), 0);
        assert_eq!(held(&t), (0, 0, 0));
    }
}
