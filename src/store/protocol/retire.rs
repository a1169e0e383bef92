//! Removal bookkeeping: what happens after a record left its table.
//!
//! Each `retire_*` runs exactly once per record that left its table, by
//! whichever path removed it (sweep, revocation, cascade, release, drain).
//! If the record was attached it owns its tenant units and its tenant
//! hold: they are given back here, its key leaves the tenant's index, and
//! its event is emitted. A record that was never attached owns nothing (its
//! creation's guard gives its units back) and emits nothing. When asked
//! (`detach`: the parent is not itself being removed), the record also
//! leaves its parent's index; then its own children are removed (cause
//! `Cascaded`). Each returns the number of descendants it removed.
//! `retire_stream` is the same for a stream that left the stream hub (not
//! a record: it owns no tenant units, and counts as no descendant).
//!
//! This file is the protocol ([`Why`], [`Stored`], the sweep of one
//! kind); each kind's `retire_*` is in the kind's own file, so this file
//! imports none of them.

use crate::base::time::MonoTime;
use crate::contract::events::{Cause, Root};
use crate::mem::table::{Placed, Removed, Storage, TableOf, SWEEP_STEP_MAX};
use crate::store::Store;
use std::hash::Hash;

/// Why a record is retired, as its removal event tells it: its cause and,
/// for a cascade, the removal that started it (made only when someone
/// subscribes: building it may copy a name).
#[derive(Clone)]
pub(in crate::store) struct Why {
    cause: Cause,
    root: Option<Root>,
}

impl From<Cause> for Why {
    fn from(cause: Cause) -> Self {
        Why { cause, root: None }
    }
}

impl Why {
    pub(in crate::store) fn cause(&self) -> Cause {
        self.cause
    }

    pub(in crate::store) fn root(&self) -> Option<&Root> {
        self.root.as_ref()
    }

    /// A cascade from `root`.
    fn cascade(root: Option<Root>) -> Self {
        Why {
            cause: Cause::Cascaded,
            root,
        }
    }

    /// What the children of a record retired for `self` are retired for:
    /// the same root if this is a cascade, else this record's removal.
    pub(in crate::store) fn for_children(&self, root: impl FnOnce() -> Option<Root>) -> Self {
        if self.cause == Cause::Cascaded {
            Why::cascade(self.root.clone())
        } else {
            Why::cascade(root())
        }
    }
}

/// A kind of record the store keeps in a table of its own: where it lives
/// and what removing it involves. The sweep and the digest loop over the
/// kinds through this trait; creation adds [`Child`](crate::store::protocol::attach::Child).
pub(in crate::store) trait Stored: Sized {
    /// The table's key.
    type Key: Eq + Hash + Ord + Clone;
    /// Where the table keeps its records: a slab, whose slot key names
    /// each record for good (its place).
    type Storage: Storage<Self::Key, Self> + Placed<Place = u64>;
    /// The record's table.
    fn table(store: &Store) -> &TableOf<Self::Key, Self, Self::Storage>;
    /// The removal bookkeeping of a record that left its table from slot
    /// key `place`, for `why`; it also leaves its parent's list if
    /// `detach` (false in a cascade: the parent is going itself). Returns
    /// the descendants it removed.
    fn retire(
        store: &Store,
        place: u64,
        removed: Removed<Self::Key, Self>,
        why: Why,
        now: MonoTime,
        detach: bool,
    ) -> usize;
}

impl Store {
    /// Sweeps one kind's table at `now` and retires what left: the records
    /// removed, descendants included. A step of at most [`SWEEP_STEP_MAX`]
    /// removals is retired before the next is found, so a mass expiry
    /// holds a step's records, not all of them, and its first events go
    /// out while the rest are still being found.
    pub(in crate::store) fn sweep_kind<S: Stored>(&self, now: MonoTime) -> usize {
        let mut out: Vec<(u64, Removed<S::Key, S>)> = Vec::new();
        let mut removed = 0;
        loop {
            // A step at a time, each retired before the next is found.
            let done = S::table(self).sweep_placed(now, &mut out, SWEEP_STEP_MAX);
            #[cfg(all(test, not(relaystore_loom)))]
            tests::holding(out.len());
            removed += out
                .drain(..)
                .map(|(place, r)| {
                    let late = now.saturating_since(r.stamp.deadline);
                    crate::contract::metrics::expiry_lag(
                        crate::contract::metrics::EngineLabel::Memory,
                        late,
                    );
                    1 + S::retire(self, place, r, Cause::Expired.into(), now, true)
                })
                .sum::<usize>();
            if done {
                return removed;
            }
        }
    }

    /// An order-independent digest of one kind's table, tagged `tag`.
    #[cfg(any(test, feature = "internals"))]
    pub(in crate::store) fn digest_kind<S: Stored>(&self, tag: u8) -> u64 {
        digest_table(S::table(self), tag)
    }
}

/// The sum of per-record hashes of (tag, key, version, deadline).
#[cfg(any(test, feature = "internals"))]
pub(in crate::store) fn digest_table<K: Eq + Hash + Ord + Clone, V, S: Storage<K, V>>(
    table: &TableOf<K, V, S>,
    tag: u8,
) -> u64 {
    let mut d = 0u64;
    table.for_each(|k, _, s| {
        use std::hash::Hasher;
        let mut h = std::hash::DefaultHasher::new();
        (tag, k, s.version, s.deadline).hash(&mut h);
        d = d.wrapping_add(h.finish());
    });
    d
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use crate::base::ids::TenantId;
    use crate::base::time::ManualClock;
    use crate::contract::config::{StoreConfig, TenantQuota};
    use crate::contract::events::{Collection, Received};
    use crate::mem::table::SWEEP_STEP_MAX;
    use crate::store::Store;
    use std::cell::Cell;
    use std::sync::Arc;
    use std::time::Duration;

    std::thread_local! {
        /// The most removed records this thread's sweeps held at once
        /// before retiring them.
        static HELD_MOST: Cell<usize> = const { Cell::new(0) };
    }

    pub(in crate::store) fn holding(n: usize) {
        HELD_MOST.with(|most| most.set(most.get().max(n)));
    }

    #[test]
    fn a_mass_expiry_is_retired_a_bounded_step_at_a_time() {
        let expiring = 3 * SWEEP_STEP_MAX;
        let clock = Arc::new(ManualClock::new());
        let config = StoreConfig::default()
            .presence_max(expiring as u64)
            .subscriber_buffer_max(2 * expiring)
            .tenant(TenantQuota::unlimited());
        let store = Store::new(config, clock.clone()).unwrap();
        let events = store.subscribe_to(&[Collection::Presence]).unwrap();
        for m in 0..expiring {
            store
                .heartbeat(
                    TenantId(m as u64 % 4),
                    &format!("m{m}"),
                    Duration::from_secs(5),
                    None,
                    None,
                )
                .unwrap();
        }
        clock.advance(Duration::from_secs(6));
        HELD_MOST.with(|most| most.set(0));
        assert_eq!(store.sweep(), expiring);
        assert_eq!(store.stats().presence, 0);
        let held = HELD_MOST.with(Cell::get);
        assert!(
            held <= SWEEP_STEP_MAX,
            "the sweep held {held} removed records at once (the step is {SWEEP_STEP_MAX})"
        );
        let mut seen = 0;
        while let Some(received) = events.try_recv() {
            assert!(matches!(received, Received::Event(_)), "{received:?}");
            seen += 1;
        }
        assert_eq!(seen, expiring, "every removal announced once");
    }
}
