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
//!   moved out of the record into words beside the slot's lock as the
//!   record enters its slot, and back as it leaves (as a kind's own
//!   [`SlotWords`]); a longer key stays in the record, and the words say
//!   so ([`KEPT`]). A read that takes no lock
//!   ([`NamedTable::peek`]) compares the key looked for with the words,
//!   under the slot's sequence check, with the record's head and the
//!   kind's words.

use crate::base::sync::{AtomicU64, Ordering};
use crate::mem::name_index::{NameIndex, Writer};
use crate::mem::record::{Head, Record};
use crate::mem::shard::Upsert;
use crate::mem::slab::Slab;
use crate::mem::table::{Beside, Find, SlotWords, Storage, TableOf};
use crate::mem::wheel::Handles;
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

/// A named record in its slot: its key (`None` while the words beside
/// the slot hold it) and its payload.
pub(crate) struct Named<K, V> {
    key: Option<K>,
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
            Some(own) => own.borrow() == key,
            None => key.key_words() == Some(self.key_words()),
        }
    }

    /// The key of the record `named` beside these words. Under the slot's
    /// lock.
    fn key_of<K: OwnedSlotKey + Clone, V>(&self, named: &Named<K, V>) -> K {
        named.key.clone().unwrap_or_else(|| {
            K::from_key_words(self.key_words()).expect("the words hold the key they were given")
        })
    }
}

impl<K: OwnedSlotKey, V, W: SlotWords<V>> SlotWords<Named<K, V>> for ByName<W> {
    fn fill(&self, head: &Head, named: &mut Named<K, V>) {
        let words = match named.key.as_ref().and_then(SlotKey::key_words) {
            Some(words) => {
                named.key = None;
                words
            }
            None => KEPT,
        };
        for (word, w) in self.key.iter().zip(words) {
            word.store(w, Ordering::Release);
        }
        self.words.fill(head, &mut named.value);
    }

    fn empty(&self, named: &mut Named<K, V>) {
        if named.key.is_none() {
            named.key = K::from_key_words(self.key_words());
        }
        self.words.empty(&mut named.value);
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

impl<K, V, W> Storage<K, V> for NamedSlab<K, V, W>
where
    K: OwnedSlotKey + Hash + Eq + Ord + Clone,
    W: SlotWords<V>,
{
    type Timing = Handles;

    fn with_capacity(_capacity: usize) -> Self {
        NamedSlab {
            slab: Slab::new(),
            index: NameIndex::new(),
        }
    }

    fn upsert<R>(
        &self,
        key: K,
        decide: impl FnOnce(Option<(&Head, &V)>) -> Upsert<Record<V>, R>,
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
        let mut key = Some(key);
        let (r, replaced) = Storage::<u64, Named<K, V>>::upsert(&self.slab, slot_key, |seen| {
            match decide(seen.map(|(head, named)| (head, &named.value))) {
                Upsert::Put(Record { head, value }, r) => Upsert::Put(
                    Record {
                        head,
                        value: Named {
                            key: key.take(),
                            value,
                        },
                    },
                    r,
                ),
                Upsert::Keep(r) => Upsert::Keep(r),
            }
        })?;
        if fresh {
            if key.is_none() {
                writer.insert(slot_key as u32);
            } else {
                self.slab.unclaim(slot_key);
            }
        }
        Some((
            r,
            replaced.map(|Record { head, value }| Record {
                head,
                value: value.value,
            }),
        ))
    }

    fn remove_if<E>(
        &self,
        key: &K,
        decide: impl FnOnce(&Head, &V) -> std::result::Result<(), E>,
    ) -> Option<std::result::Result<Record<V>, E>> {
        let mut writer = self.index.write(self.index.hash(key));
        let slot = self.slot_of(&writer, key)?;
        let slot_key = self.slab.read_at(slot, |k, _, _| k)?;
        let removed =
            Storage::<u64, Named<K, V>>::remove_if(&self.slab, &slot_key, |head, named| {
                decide(head, &named.value)
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
