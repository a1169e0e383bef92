//! `NamedSlab`: records keyed by a caller's name, kept in slab slots and
//! found through a [`NameIndex`] (ADR 0078).
//!
//! A named record lives in a slot with its key beside it ([`Named`]), so
//! its name is kept once, in its slot; the index holds only a word per
//! record naming the slot. A lookup asks the index for the slots under the
//! name's hash and verifies the name in each slot, under the slot's lock
//! (or, for a read that takes none, the slot's sequence check): one slot's
//! lock, where a hash map's lookup takes a shard's lock that every record
//! of the shard shares.
//!
//! # Ground rules
//!
//! - **A name enters and leaves under its index shard's lock** (rung
//!   `Names`, above the slot's): a creation finds no live record of the
//!   name, fills a slot and enters it in the index; a removal takes the
//!   entry out and empties the slot, both holding the lock. So a name has
//!   at most one slot, and the index is exact for its writers.
//! - **Everything else finds a record by its name's hint**: the slot the
//!   index names, whose record is the one looked for only if its key is
//!   equal, checked under the slot's lock. A renewal, a read or a change
//!   takes no index lock.
//! - **The key is kept once.** A key that fits [`KEY_WORDS`] words is
//!   written to words beside the slot's lock as its record enters the
//!   slot; a longer key is kept in the record, boxed (one word in the
//!   slot), and the words say so ([`KEPT`]). A record leaving the table
//!   leaves without its key: the table hands out the key it was asked
//!   for, or the one its slot held. A read that takes no lock
//!   ([`NamedTable::peek`]) compares the key looked for with the words,
//!   under the slot's sequence check, with the record's head and the
//!   kind's words.

use crate::base::sync::{AtomicU64, Ordering};
use crate::mem::name_index::{NameIndex, Writer};
use crate::mem::record::{Head, Record};
use crate::mem::shard::Upsert;
use crate::mem::slab::Slab;
use crate::mem::table::{Beside, Find, Placed, SlotWords, Storage, TableOf};
use crate::mem::wheel::ByKey;
use std::borrow::Borrow;
use std::hash::Hash;

/// Words a named slot keeps its key in.
pub(crate) const KEY_WORDS: usize = 4;

/// What a slot's key words hold while the key is kept in the record (too
/// long for the words). No key's words are these ([`SlotKey`]).
pub(crate) const KEPT: [u64; KEY_WORDS] = [u64::MAX; KEY_WORDS];

/// A key as a named slot keeps it beside its lock, in [`KEY_WORDS`]
/// words: its owned form and the borrowed forms it is looked up by give
/// the same words, and no key gives [`KEPT`].
pub(crate) trait SlotKey {
    /// The key's words; `None` for a key too long for them.
    fn key_words(&self) -> Option<[u64; KEY_WORDS]>;
}

/// An owned key, made back from its words as its record leaves its slot.
pub(crate) trait OwnedSlotKey: SlotKey + Sized {
    fn from_key_words(words: [u64; KEY_WORDS]) -> Option<Self>;
}

/// A named record in its slot: its key if the words beside the slot
/// cannot hold it (boxed: most keys fit the words, and the slot keeps
/// one word for the rest), and its payload.
pub(crate) struct Named<K, V> {
    key: Option<Box<K>>,
    value: V,
}

/// What is kept beside a named record's slot lock: its key's words, and
/// the kind's own words `W` ([`SlotWords`] of its payload).
pub(crate) struct ByName<W> {
    key: [AtomicU64; KEY_WORDS],
    words: W,
}

impl<W: Default> Default for ByName<W> {
    fn default() -> Self {
        ByName {
            key: std::array::from_fn(|_| AtomicU64::new(0)),
            words: W::default(),
        }
    }
}

impl<W> ByName<W> {
    fn key_words(&self) -> [u64; KEY_WORDS] {
        self.key.each_ref().map(|w| w.load(Ordering::Acquire))
    }

    /// Whether the key words are `words`: a word at a time, each compared
    /// as it is loaded (a comparison of the arrays would store the loaded
    /// words and load them back wider, which the processor cannot
    /// forward).
    #[inline]
    fn holds_words(&self, words: &[u64; KEY_WORDS]) -> bool {
        self.key
            .iter()
            .zip(words)
            .all(|(word, w)| word.load(Ordering::Acquire) == *w)
    }

    /// Whether the record `named` beside these words has key `key`. Under
    /// the slot's lock.
    fn holds<K, V, Q>(&self, named: &Named<K, V>, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: SlotKey + Eq + ?Sized,
    {
        match &named.key {
            Some(own) => (**own).borrow() == key,
            None => key.key_words() == Some(self.key_words()),
        }
    }

    /// The key of the record `named` beside these words. Under the slot's
    /// lock.
    fn key_of<K: OwnedSlotKey + Clone, V>(&self, named: &Named<K, V>) -> K {
        named.key.as_deref().cloned().unwrap_or_else(|| {
            K::from_key_words(self.key_words()).expect("the words hold the key they were given")
        })
    }
}

/// The kind's words of a named record: its key's words are written by
/// [`NamedSlab`]'s creation, before the record enters its slot, and left
/// as they are when it leaves (a slot without a record reads as dead
/// before its key is compared).
impl<K, V, W: SlotWords<V>> SlotWords<Named<K, V>> for ByName<W> {
    fn fill(&self, head: &Head, named: &mut Named<K, V>) {
        self.words.fill(head, &mut named.value);
    }

    fn empty(&self, named: &mut Named<K, V>) {
        self.words.empty(&mut named.value);
    }
}

impl<W> ByName<W> {
    /// Writes a key's words, under the slot's lock (a reader that takes
    /// none reads them inside the slot's sequence check).
    fn set_key(&self, words: [u64; KEY_WORDS]) {
        for (word, w) in self.key.iter().zip(words) {
            word.store(w, Ordering::Release);
        }
    }
}

/// Named records in a slab, found through a name index.
pub(crate) struct NamedSlab<K, V, W = ()> {
    slab: Slab<Named<K, V>, Beside<ByName<W>>>,
    index: NameIndex,
}

/// What a read that takes no lock found ([`NamedTable::peek`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Peeked<R> {
    /// The record, as the reader's closure read it.
    Seen(R),
    /// No record of the key.
    Missing,
    /// The record is there, but only a read under its lock can answer
    /// (the closure declined, or the key is kept in the record).
    Locked,
}

impl<K, V, W> NamedSlab<K, V, W>
where
    K: OwnedSlotKey + Hash + Eq,
    W: SlotWords<V>,
{
    /// The slot holding `key`'s record, found under its index shard's
    /// lock, held by the caller.
    fn slot_of(&self, writer: &Writer<'_>, key: &K) -> Option<u32> {
        writer.find(|slot| {
            self.slab
                .read_at(slot, |_, beside, named| beside.words.holds(named, key))
                .unwrap_or(false)
        })
    }

    /// Reads `key`'s record without a lock: `f` gets its head and the
    /// kind's words from a moment no write overlapped, and may run more
    /// than once, so it must only load; it answers `None` to leave the
    /// read to the record's lock. Writes nothing shared.
    #[inline]
    pub(crate) fn peek<Q, R>(&self, key: &Q, mut f: impl FnMut(&Head, &W) -> Option<R>) -> Peeked<R>
    where
        K: Borrow<Q>,
        Q: SlotKey + Hash + ?Sized,
    {
        let Some(words) = key.key_words() else {
            return Peeked::Locked;
        };
        let found = self.index.find(self.index.hash(key), |slot| {
            self.slab
                .peek_at(slot, |beside| {
                    // A slot without a record keeps a dead head (deadline 0).
                    let held = beside.head.state().deadline_ms() != 0
                        && (beside.words.holds_words(&words)
                            || crate::base::faults::active(
                                crate::base::faults::StoreFault::NameUnverified,
                            ));
                    held.then(|| f(&beside.head, &beside.words.words))
                })
                .flatten()
        });
        match found {
            None => Peeked::Missing,
            Some(None) => Peeked::Locked,
            Some(Some(seen)) => Peeked::Seen(seen),
        }
    }
}

/// A named record's place is the key of the slot holding it, with its
/// generation: it names one record for good (a record replacing an
/// expired one of its name in the same slot is due later than any entry
/// of the expired one), so its wheel entry is the slot key and the due
/// tick (ADR 0050): 12 bytes, where the name and a handle took 48.
impl<K, V, W> Placed for NamedSlab<K, V, W> {
    type Place = u64;
}

impl<K, V, W> Storage<K, V> for NamedSlab<K, V, W>
where
    K: OwnedSlotKey + Hash + Eq + Ord + Clone,
    W: SlotWords<V>,
{
    type Timing = ByKey;

    fn with_capacity(_capacity: usize) -> Self {
        NamedSlab {
            slab: Slab::new(),
            index: NameIndex::new(),
        }
    }

    fn upsert<R>(
        &self,
        key: K,
        decide: impl FnOnce(&u64, Option<(&Head, &V)>) -> Upsert<Record<V>, R>,
    ) -> Option<(R, Option<Record<V>>)> {
        let mut writer = self.index.write(self.index.hash(&key));
        let (slot_key, fresh) = match self.slot_of(&writer, &key) {
            Some(slot) => {
                let slot_key = self
                    .slab
                    .read_at(slot, |k, _, _| k)
                    .expect("a slot the index names under its lock is filled");
                (slot_key, false)
            }
            // No slot left: the table answers with its scope.
            None => (self.slab.claim()?, true),
        };
        // The key goes into the words beside the slot, or if too long for
        // them into the record.
        let words = key.key_words();
        let mut long = Some(words.is_none().then(|| Box::new(key)));
        let mut old_head = None;
        let (r, replaced) = self.slab.upsert(slot_key, |beside, held| {
            let seen = held.as_deref().map(|named| (&beside.head, &named.value));
            match decide(&slot_key, seen) {
                Upsert::Put(Record { head, value }, r) => {
                    beside.words.set_key(words.unwrap_or(KEPT));
                    let named = Named {
                        key: long.take().expect("put once"),
                        value,
                    };
                    let (named, old) = beside.put(held, Record { head, value: named });
                    old_head = old;
                    Upsert::Put(named, r)
                }
                Upsert::Keep(r) => Upsert::Keep(r),
            }
        });
        if fresh {
            if long.is_none() {
                writer.insert(slot_key as u32);
            } else {
                self.slab.unclaim(slot_key);
            }
        }
        Some((
            r,
            replaced.map(|named| Record {
                head: old_head.expect("a replaced record had a head"),
                value: named.value,
            }),
        ))
    }

    fn remove_if<E>(
        &self,
        key: &K,
        decide: impl FnOnce(&u64, &Head, &V) -> std::result::Result<(), E>,
    ) -> Option<std::result::Result<Record<V>, E>> {
        let mut writer = self.index.write(self.index.hash(key));
        let slot = self.slot_of(&writer, key)?;
        let slot_key = self.slab.read_at(slot, |k, _, _| k)?;
        let removed =
            Storage::<u64, Named<K, V>>::remove_if(&self.slab, &slot_key, |place, head, named| {
                decide(place, head, &named.value)
            })?;
        if removed.is_ok() {
            let gone = writer.remove(slot);
            debug_assert!(gone, "a removed named record had its entry");
        }
        Some(removed.map(|Record { head, value }| Record {
            head,
            value: value.value,
        }))
    }

    fn remove_at<E>(
        &self,
        place: &u64,
        decide: impl FnOnce(&Head, &V) -> std::result::Result<(), E>,
    ) -> Option<std::result::Result<(K, Record<V>), E>> {
        // The slot's name, read under its lock; then the name's index
        // lock, above the slot's, and the slot again. A slot key names
        // one record, whose name does not change: if the record left
        // between the two holds, its slot is at another generation and
        // the removal finds nothing.
        let key = self
            .slab
            .read(place, |beside, named| beside.words.key_of(named))?;
        let mut writer = self.index.write(self.index.hash(&key));
        let removed =
            Storage::<u64, Named<K, V>>::remove_if(&self.slab, place, |_, head, named| {
                decide(head, &named.value)
            })?;
        if removed.is_ok() {
            let gone = writer.remove(*place as u32);
            debug_assert!(gone, "a removed named record had its entry");
        }
        Some(removed.map(|Record { head, value }| {
            (
                key,
                Record {
                    head,
                    value: value.value,
                },
            )
        }))
    }

    fn head_at<R>(&self, place: &u64, f: impl FnOnce(&Head) -> R) -> Option<R> {
        self.slab.read(place, |beside, _| f(&beside.head))
    }

    fn place_of(&self, key: &K) -> Option<u64> {
        self.index.find(self.index.hash(key), |slot| {
            self.slab
                .read_at(slot, |k, beside, named| {
                    beside.words.holds(named, key).then_some(k)
                })
                .flatten()
        })
    }

    fn len(&self) -> usize {
        self.slab.len()
    }

    fn for_each(&self, mut f: impl FnMut(&K, &Head, &V)) {
        self.slab
            .for_each(|_, beside, named| f(&beside.words.key_of(named), &beside.head, &named.value))
    }
}

impl<K, Q, V, W> Find<Q, V> for NamedSlab<K, V, W>
where
    K: Hash + Eq + Borrow<Q>,
    Q: SlotKey + Hash + Eq + ?Sized,
    W: SlotWords<V>,
{
    const EXCLUSIVE: bool = true;
    type Words = W;

    #[inline]
    fn read<R>(&self, key: &Q, f: impl FnOnce(&Head, &W, &V) -> R) -> Option<R> {
        let mut f = Some(f);
        self.index.find(self.index.hash(key), |slot| {
            self.slab
                .read_at(slot, |_, beside, named| {
                    beside.words.holds(named, key).then(|| {
                        f.take().expect("answered once")(
                            &beside.head,
                            &beside.words.words,
                            named.value_ref(),
                        )
                    })
                })
                .flatten()
        })
    }

    #[inline]
    fn update<R>(&self, key: &Q, f: impl FnOnce(&Head, &W, &mut V) -> R) -> Option<R> {
        let mut f = Some(f);
        self.index.find(self.index.hash(key), |slot| {
            self.slab
                .update_at(slot, |_, beside, named| {
                    beside.words.holds(named, key).then(|| {
                        f.take().expect("answered once")(
                            &beside.head,
                            &beside.words.words,
                            &mut named.value,
                        )
                    })
                })
                .flatten()
        })
    }
}

impl<K, V> Named<K, V> {
    fn value_ref(&self) -> &V {
        &self.value
    }
}

/// A table of named records in slab slots, with the kind's words `W`
/// beside each record's head.
pub(crate) type NamedTable<K, V, W = ()> = TableOf<K, V, NamedSlab<K, V, W>>;

impl<K, V, W> NamedTable<K, V, W>
where
    K: OwnedSlotKey + Hash + Eq + Ord + Clone,
    W: SlotWords<V>,
{
    /// Reads `key`'s record without a lock ([`NamedSlab::peek`]).
    #[inline]
    pub(crate) fn peek<Q, R>(&self, key: &Q, f: impl FnMut(&Head, &W) -> Option<R>) -> Peeked<R>
    where
        K: Borrow<Q>,
        Q: SlotKey + Hash + ?Sized,
    {
        self.storage().peek(key, f)
    }

    /// The key of the record at `place` (a slot key, which names one
    /// record for good), if it is still there: read without a lock when
    /// the slot's words hold it, else under the slot's lock.
    pub(crate) fn key_at(&self, place: u64) -> Option<K> {
        let named = self.storage();
        let words = named.slab.peek(&place, |b| b.words.key_words())?;
        match (words != KEPT).then(|| K::from_key_words(words)).flatten() {
            Some(key) => Some(key),
            None => named.slab.read(&place, |b, n| b.words.key_of(n)),
        }
    }

    /// The word of the slot holding `key`'s record (found without a
    /// lock): every hold of the slot's lock moves it, so a test reads
    /// whether a call wrote it.
    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn word<Q>(&self, key: &Q) -> Option<u64>
    where
        K: Borrow<Q>,
        Q: SlotKey + Hash + ?Sized,
    {
        let named = self.storage();
        let words = key.key_words()?;
        let slot = named.index.find(named.index.hash(key), |slot| {
            named
                .slab
                .peek_at(slot, |b| b.words.holds_words(&words))
                .filter(|&held| held)
                .map(|_| slot)
        })?;
        named.slab.word_at(slot)
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use crate::base::error::Scope;
    use crate::base::sync::Arc;
    use crate::base::time::MonoTime;
    use crate::mem::record::Versions;

    /// A test name: one word, kept beside its slot, or (`long`) too long
    /// for the words and kept in its record.
    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    struct Key {
        word: u64,
        long: bool,
    }

    fn short(word: u64) -> Key {
        Key { word, long: false }
    }

    fn long(word: u64) -> Key {
        Key { word, long: true }
    }

    impl SlotKey for Key {
        fn key_words(&self) -> Option<[u64; KEY_WORDS]> {
            (!self.long).then_some([self.word, 0, 0, 0])
        }
    }

    impl OwnedSlotKey for Key {
        fn from_key_words(words: [u64; KEY_WORDS]) -> Option<Self> {
            Some(short(words[0]))
        }
    }

    fn table() -> NamedTable<Key, u32> {
        TableOf::new(
            Scope::Named("test"),
            16,
            Arc::new(Versions::new()),
            MonoTime::ZERO,
        )
    }

    /// Records, live wheel entries, stale ones.
    fn held(t: &NamedTable<Key, u32>) -> (usize, usize, usize) {
        (t.len(), t.scheduled(), t.stale_timers())
    }

    const fn at(ms: u64) -> MonoTime {
        MonoTime::from_millis(ms)
    }

    /// A name created again after its record expired takes the same slot
    /// at the same generation: the expired record's entry, named by the
    /// same slot key, finds a record due later and settles stale, and the
    /// new record leaves at its own deadline, under its name.
    #[test]
    fn a_name_created_again_in_its_slot_leaves_at_its_own_deadline() {
        for key in [short(1), long(1)] {
            let t = table();
            t.insert(key.clone(), 1, at(0), 1_000).unwrap();
            let (_, replaced) = t.insert(key.clone(), 2, at(2_000), 5_000).unwrap();
            assert_eq!(replaced.map(|r| (r.key, r.value)), Some((key.clone(), 1)));
            assert_eq!(held(&t), (1, 1, 1));
            let mut out = Vec::new();
            assert_eq!(t.sweep(at(2_000), &mut out), 0, "the entry of the first");
            assert_eq!(held(&t), (1, 1, 0));
            assert_eq!(t.sweep(at(4_999), &mut out), 0);
            assert_eq!(t.sweep(at(5_000), &mut out), 1);
            assert_eq!((&out[0].key, out[0].value), (&key, 2));
            assert_eq!(held(&t), (0, 0, 0));
        }
    }

    /// A removed name's slot, reused by another name at the next
    /// generation: the removed record's entry names a generation gone,
    /// and only the new record leaves, under its own name.
    #[test]
    fn an_entry_of_a_removed_name_never_removes_its_slots_next_record() {
        let t = table();
        t.insert(short(1), 1, at(0), 1_000).unwrap();
        t.remove(&short(1), at(10), None).unwrap();
        t.insert(short(2), 2, at(20), 5_000).unwrap();
        assert_eq!(t.storage().slab.slots(), 1, "the slot was reused");
        let mut out = Vec::new();
        assert_eq!(t.sweep(at(1_000), &mut out), 0);
        assert_eq!(held(&t), (1, 1, 0));
        assert_eq!(t.sweep(at(5_000), &mut out), 1);
        assert_eq!((&out[0].key, out[0].value), (&short(2), 2));
    }

    /// A deadline moved earlier finds its record's slot by name and
    /// schedules it there; the record leaves at the earlier deadline.
    #[test]
    fn a_named_record_pulled_in_leaves_at_its_new_deadline() {
        for key in [short(3), long(3)] {
            let t = table();
            t.insert(key.clone(), 3, at(0), 10_000).unwrap();
            t.renew(&key, at(0), 1_000, None).unwrap();
            assert_eq!(held(&t), (1, 1, 1));
            let mut out = Vec::new();
            assert_eq!(t.sweep(at(1_000), &mut out), 1);
            assert_eq!(out[0].key, key);
            assert_eq!(t.sweep(at(10_000), &mut out), 0, "nothing more");
            assert_eq!(held(&t), (0, 0, 0));
        }
    }
}
