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

use crate::mem::name_index::NameIndex;
use crate::mem::record::{Head, Record};
use crate::mem::shard::Upsert;
use crate::mem::slab::Slab;
use crate::mem::table::{Beside, Find, SlotWords, Storage};
use crate::mem::wheel::Handles;
use std::borrow::Borrow;
use std::hash::Hash;

/// A named record in its slot: its key, kept here once, and its payload.
pub(crate) struct Named<K, V> {
    pub(crate) key: K,
    pub(crate) value: V,
}

/// A kind's words beside a named record's slot ([`SlotWords`] of its
/// payload, which never see the key).
#[derive(Default)]
pub(crate) struct ByName<W>(pub(crate) W);

impl<K, V, W: SlotWords<V>> SlotWords<Named<K, V>> for ByName<W> {
    fn fill(&self, head: &Head, named: &mut Named<K, V>) {
        self.0.fill(head, &mut named.value);
    }
    fn empty(&self, named: &mut Named<K, V>) {
        self.0.empty(&mut named.value);
    }
}

/// Named records in a slab, found through a name index.
pub(crate) struct NamedSlab<K, V, W = ()> {
    slab: Slab<Named<K, V>, Beside<ByName<W>>>,
    index: NameIndex,
}

impl<K, V, W> NamedSlab<K, V, W>
where
    K: Hash + Eq,
    W: SlotWords<V>,
{
    /// The slot holding `key`'s record, found under its index shard's
    /// lock held by the caller.
    fn slot_of<Q>(&self, writer: &crate::mem::name_index::Writer<'_>, key: &Q) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        writer.find(|slot| {
            self.slab
                .read_at(slot, |_, _, named| named.key.borrow() == key)
                .unwrap_or(false)
        })
    }
}

impl<K, V, W> Storage<K, V> for NamedSlab<K, V, W>
where
    K: Hash + Eq + Ord,
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
            None => {
                // No slot left: the table answers with its scope.
                (self.slab.claim()?, true)
            }
        };
        let mut key = Some(key);
        let (r, replaced) = Storage::<u64, Named<K, V>>::upsert(&self.slab, slot_key, |seen| {
            match decide(seen.map(|(head, named)| (head, &named.value))) {
                Upsert::Put(Record { head, value }, r) => {
                    let key = key.take().expect("decided once");
                    Upsert::Put(
                        Record {
                            head,
                            value: Named { key, value },
                        },
                        r,
                    )
                }
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
            .for_each(|_, beside, named| f(&named.key, &beside.head, &named.value))
    }
}

impl<K, Q, V, W> Find<Q, V> for NamedSlab<K, V, W>
where
    K: Hash + Eq + Borrow<Q>,
    Q: Hash + Eq + ?Sized,
    W: SlotWords<V>,
{
    const EXCLUSIVE: bool = true;

    #[inline]
    fn read<R>(&self, key: &Q, f: impl FnOnce(&Head, &V) -> R) -> Option<R> {
        let mut f = Some(f);
        self.index.find(self.index.hash(key), |slot| {
            self.slab
                .read_at(slot, |_, beside, named| {
                    (named.key.borrow() == key)
                        .then(|| f.take().expect("answered once")(&beside.head, &named.value))
                })
                .flatten()
        })
    }

    #[inline]
    fn update<R>(&self, key: &Q, f: impl FnOnce(&Head, &mut V) -> R) -> Option<R> {
        let mut f = Some(f);
        self.index.find(self.index.hash(key), |slot| {
            self.slab
                .update_at(slot, |_, beside, named| {
                    (named.key.borrow() == key)
                        .then(|| f.take().expect("answered once")(&beside.head, &mut named.value))
                })
                .flatten()
        })
    }
}

/// A table of named records in slab slots, with the kind's words `W`
/// beside each record's head.
pub(crate) type NamedTable<K, V, W = ()> = crate::mem::table::TableOf<K, V, NamedSlab<K, V, W>>;
