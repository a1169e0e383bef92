//! The one module that touches `dashmap`.
//!
//! [`ShardMap`] is a sharded concurrent hash map, hashed with a per-process
//! random `ahash` seed (keys are attacker-influenced, so a fixed seed would
//! invite collision flooding). Access is through closures only: no `Ref`,
//! `RefMut` or `Entry` guard ever leaves this module, so no caller can hold a
//! shard lock while calling back into the store (the classic dashmap
//! self-deadlock).
//!
//! # Ground rules for closures passed in
//!
//! They run while a shard lock is held. They must be short, must not call
//! into the store or into user code, must not take the wheel lock (the lock
//! order is wheel, then shard; never the reverse) and must not panic. Small
//! side effects on atomics owned by the record or on the store-wide version
//! counter are allowed; they are the point of some closures.
//!
//! Lookups take any borrowed form of the key (`K: Borrow<Q>`), so a caller
//! holding a name as `&str` looks it up without building an owned key.
//!
//! Under `--cfg relaystore_loom` the map is a single `sync::RwLock<HashMap>`
//! behind the same API, because loom cannot see inside dashmap; the models
//! then exercise the real record transitions on top of it.

use crate::base::sync::{enter, Rung};
use std::borrow::Borrow;
use std::hash::Hash;

type Hasher = ahash::RandomState;

/// The fewest shards a map has. Each shard is one reader-writer lock word
/// that every lookup in it writes (a shared lock is a read-modify-write),
/// so on a small machine dashmap's default of four shards per core (eight
/// on two cores) makes two threads meet on the same words: presence
/// heartbeats on two threads took 0.90x the time with 64 shards, and
/// 256 measured no better (docs/PERFORMANCE.md). A shard costs 128 bytes
/// while the map lives.
#[cfg(not(relaystore_loom))]
pub(crate) const SHARDS_MIN: usize = 64;

/// What an [`ShardMap::upsert`] decision does with the key.
pub(crate) enum Upsert<V, R> {
    /// Store `V` (replacing any existing value) and return `R`.
    Put(V, R),
    /// Leave the map as it is and return `R`.
    Keep(R),
}

#[cfg(not(relaystore_loom))]
mod imp {
    use super::*;
    use dashmap::mapref::entry::Entry;
    use dashmap::DashMap;

    pub(crate) struct ShardMap<K, V> {
        inner: DashMap<K, V, Hasher>,
    }

    /// How many shards a map has: dashmap's default (four per core, rounded
    /// up to a power of two), but at least [`SHARDS_MIN`].
    fn shard_amount() -> usize {
        static AMOUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *AMOUNT.get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            (cores * 4).next_power_of_two().max(SHARDS_MIN)
        })
    }

    impl<K: Eq + Hash, V> ShardMap<K, V> {
        pub(crate) fn with_capacity(capacity: usize) -> Self {
            ShardMap {
                inner: DashMap::with_capacity_and_hasher_and_shard_amount(
                    capacity,
                    Hasher::new(),
                    shard_amount(),
                ),
            }
        }

        /// Runs `f` on the value under a shared shard lock.
        #[inline]
        pub(crate) fn read<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            let _shard = enter(Rung::Shard);
            self.inner.get(key).map(|r| f(r.value()))
        }

        /// Runs `f` on the value under an exclusive shard lock.
        pub(crate) fn update<Q, R>(&self, key: &Q, f: impl FnOnce(&mut V) -> R) -> Option<R>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            let _shard = enter(Rung::Shard);
            self.inner.get_mut(key).map(|mut r| f(r.value_mut()))
        }

        /// Decides, under the exclusive shard lock, what to do with `key`
        /// given its current value, shown the key as the map holds it (no
        /// copy of it needed). Returns the decision's result and the value
        /// it replaced, if any.
        pub(crate) fn upsert_keyed<R>(
            &self,
            key: K,
            decide: impl FnOnce(&K, Option<&V>) -> Upsert<V, R>,
        ) -> (R, Option<V>) {
            let _shard = enter(Rung::Shard);
            match self.inner.entry(key) {
                Entry::Occupied(mut slot) => match decide(slot.key(), Some(slot.get())) {
                    Upsert::Put(value, r) => (r, Some(slot.insert(value))),
                    Upsert::Keep(r) => (r, None),
                },
                Entry::Vacant(slot) => match decide(slot.key(), None) {
                    Upsert::Put(value, r) => {
                        slot.insert(value);
                        (r, None)
                    }
                    Upsert::Keep(r) => (r, None),
                },
            }
        }

        /// Removes the value if `decide` approves it under the exclusive
        /// shard lock. `None` if the key is absent; `Some(Err)` carries the
        /// refusal.
        pub(crate) fn remove_if<Q, E>(
            &self,
            key: &Q,
            decide: impl FnOnce(&V) -> Result<(), E>,
        ) -> Option<Result<V, E>>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            let _shard = enter(Rung::Shard);
            let mut refusal = None;
            let mut seen = false;
            let removed = self.inner.remove_if(key, |_, v| {
                seen = true;
                match decide(v) {
                    Ok(()) => true,
                    Err(e) => {
                        refusal = Some(e);
                        false
                    }
                }
            });
            match (removed, refusal) {
                (Some((_, v)), _) => Some(Ok(v)),
                (None, Some(e)) => Some(Err(e)),
                (None, None) => {
                    debug_assert!(!seen);
                    None
                }
            }
        }

        pub(crate) fn len(&self) -> usize {
            self.inner.len()
        }

        /// Visits every entry, one shard at a time, under shared locks.
        /// Not a snapshot: concurrent writers may or may not be seen.
        pub(crate) fn for_each(&self, mut f: impl FnMut(&K, &V)) {
            let _shard = enter(Rung::Shard);
            for r in self.inner.iter() {
                f(r.key(), r.value());
            }
        }
    }
}

#[cfg(relaystore_loom)]
mod imp {
    use super::*;
    use crate::base::sync::{read, write, RwLock};
    use std::collections::HashMap;

    pub(crate) struct ShardMap<K, V> {
        inner: RwLock<HashMap<K, V, Hasher>>,
    }

    impl<K: Eq + Hash, V> ShardMap<K, V> {
        pub(crate) fn with_capacity(capacity: usize) -> Self {
            ShardMap {
                inner: RwLock::new(HashMap::with_capacity_and_hasher(capacity, Hasher::new())),
            }
        }

        pub(crate) fn read<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            let _shard = enter(Rung::Shard);
            read(&self.inner).get(key).map(f)
        }

        pub(crate) fn update<Q, R>(&self, key: &Q, f: impl FnOnce(&mut V) -> R) -> Option<R>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            let _shard = enter(Rung::Shard);
            write(&self.inner).get_mut(key).map(f)
        }

        pub(crate) fn upsert_keyed<R>(
            &self,
            key: K,
            decide: impl FnOnce(&K, Option<&V>) -> Upsert<V, R>,
        ) -> (R, Option<V>) {
            let _shard = enter(Rung::Shard);
            let mut map = write(&self.inner);
            match decide(&key, map.get(&key)) {
                Upsert::Put(value, r) => (r, map.insert(key, value)),
                Upsert::Keep(r) => (r, None),
            }
        }

        pub(crate) fn remove_if<Q, E>(
            &self,
            key: &Q,
            decide: impl FnOnce(&V) -> Result<(), E>,
        ) -> Option<Result<V, E>>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            let _shard = enter(Rung::Shard);
            let mut map = write(&self.inner);
            let verdict = decide(map.get(key)?);
            Some(verdict.map(|()| map.remove(key).expect("key was present under the lock")))
        }

        pub(crate) fn len(&self) -> usize {
            read(&self.inner).len()
        }

        pub(crate) fn for_each(&self, mut f: impl FnMut(&K, &V)) {
            let _shard = enter(Rung::Shard);
            for (k, v) in read(&self.inner).iter() {
                f(k, v);
            }
        }
    }
}

pub(crate) use imp::ShardMap;

impl<K: Eq + Hash, V> ShardMap<K, V> {
    /// [`upsert_keyed`](ShardMap::upsert_keyed) for a decision that needs
    /// only the value.
    pub(crate) fn upsert<R>(
        &self,
        key: K,
        decide: impl FnOnce(Option<&V>) -> Upsert<V, R>,
    ) -> (R, Option<V>) {
        self.upsert_keyed(key, |_, held| decide(held))
    }
}

#[cfg(all(test, debug_assertions, not(relaystore_loom)))]
mod tests {
    use super::*;
    use crate::base::sync::{lock_at, Mutex, Rung};

    #[test]
    fn locks_taken_down_the_hierarchy_are_fine_and_leaving_restores() {
        let (index, wheel) = (Mutex::new(()), Mutex::new(()));
        let map: ShardMap<u8, u8> = ShardMap::with_capacity(4);
        map.upsert(1, |_| Upsert::Put(1, ()));
        {
            let _i = lock_at(Rung::TenantIndex, &index);
            let _w = lock_at(Rung::Wheel, &wheel);
            assert_eq!(map.read(&1, |v| *v), Some(1));
        }
        // Everything was left: a fresh start at the top is allowed again.
        let _i = lock_at(Rung::TenantIndex, &index);
    }

    #[test]
    #[should_panic(expected = "lock hierarchy broken")]
    fn a_nested_map_call_is_caught() {
        let map: ShardMap<u8, u8> = ShardMap::with_capacity(4);
        map.upsert(1, |_| Upsert::Put(1, ()));
        map.read(&1, |_| map.read(&2, |_| ()));
    }
}
