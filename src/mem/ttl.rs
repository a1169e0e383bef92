//! [`TtlMap`]: a bounded concurrent map whose entries expire.
//!
//! This is the smallest complete use of the engine: versioned records in a
//! sharded map, deadlines on the injected clock, a timing wheel for physical
//! removal and a hard ceiling on the number of entries. The relay collections
//! are built from the same parts.

use crate::base::error::{Error, Result, Scope};
use crate::base::sync::Arc;
use crate::base::time::{Clock, MonoTime};
use crate::contract::rules::TtlRange;
use crate::mem::record::{Stamp, Versions};
pub use crate::mem::table::Removed;
use crate::mem::table::Table;
use std::hash::Hash;
use std::time::{Duration, SystemTime};

crate::contract::settings::settings! {
/// Limits of a [`TtlMap`]. Every field is a hard limit with its unit in its
/// name; [`TtlMap::new`] rejects an inconsistent set.
#[derive(Debug, Clone)]
pub struct TtlConfig {
    /// Names the collection in [`Error::CapacityExceeded`].
    pub name: &'static str = "ttl",
    /// Most entries held at once, live or expired-but-unswept.
    pub entries_max: u64 = 1_000_000,
    /// Shortest TTL accepted; shorter is [`Error::InvalidArgument`].
    pub ttl_min: Duration = Duration::from_millis(1),
    /// Longest TTL accepted; longer is [`Error::InvalidArgument`].
    pub ttl_max: Duration = Duration::from_secs(24 * 60 * 60),
}
}

/// A bounded concurrent map whose entries expire after a TTL.
///
/// - An entry is live iff `now < deadline` on the map's monotonic clock; an
///   expired entry is never returned, even before the sweep removes it.
/// - Every change is a compare-and-swap on the entry's version; the `_at`
///   variants take the version the caller last saw and refuse with
///   [`Error::Conflict`] if it moved.
/// - [`TtlMap::sweep`] (called by an [`ExpiryDriver`](crate::ExpiryDriver) in
///   production, by the test in tests) physically removes expired entries.
/// - A full map refuses inserts with [`Error::CapacityExceeded`]; it never
///   evicts a live entry.
///
/// ```
/// use relaystore::{time::ManualClock, Error, TtlConfig, TtlMap};
/// use std::{sync::Arc, time::Duration};
///
/// let clock = Arc::new(ManualClock::new());
/// let map = TtlMap::new(TtlConfig::default(), clock.clone())?;
///
/// let stamp = map.insert("peer-1", 42u32, Duration::from_secs(5))?;
/// assert_eq!(map.get(&"peer-1")?.0, 42);
///
/// clock.advance(Duration::from_secs(4));
/// let renewed = map.renew(&"peer-1", Duration::from_secs(5))?;
/// assert!(renewed.version > stamp.version);
///
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(map.get(&"peer-1"), Err(Error::Expired)); // before any sweep
/// let removed = map.sweep();
/// assert_eq!(removed[0].key, "peer-1");
/// assert_eq!(map.get(&"peer-1"), Err(Error::NotFound));
/// # Ok::<(), Error>(())
/// ```
///
/// Keys are `Ord`: the wheel hands one tick's expiries back in key order.
pub struct TtlMap<K: Ord, V> {
    table: Table<K, V>,
    clock: Arc<dyn Clock>,
    ttl: TtlRange,
}

impl<K, V> TtlMap<K, V>
where
    K: Eq + Hash + Ord + Clone,
{
    /// A map with `config`'s limits on `clock`.
    pub fn new(config: TtlConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        let ttl = TtlRange::new(config.ttl_min, config.ttl_max)?;
        if config.entries_max == 0 {
            return Err(Error::InvalidArgument {
                reason: "entries_max must be positive",
            });
        }
        let start = clock.now();
        Ok(TtlMap {
            table: Table::new(
                Scope::Named(config.name),
                config.entries_max,
                Arc::new(Versions::new()),
                start,
            ),
            clock,
            ttl,
        })
    }

    fn deadline(&self, now: MonoTime, ttl: Duration) -> Result<u64> {
        self.ttl.deadline(now, ttl)
    }

    /// Inserts `value` under `key`, live for `ttl` (rounded up to whole
    /// milliseconds). A live entry under `key` is [`Error::Conflict`]; an
    /// expired one is replaced.
    pub fn insert(&self, key: K, value: V, ttl: Duration) -> Result<Stamp> {
        let now = self.clock.now();
        let deadline = self.deadline(now, ttl)?;
        self.table
            .insert(key, value, now, deadline)
            .map(|(stamp, _replaced)| stamp)
    }

    /// The live entry's value and stamp.
    pub fn get(&self, key: &K) -> Result<(V, Stamp)>
    where
        V: Clone,
    {
        self.table
            .read(key, self.clock.now(), |v, stamp| (v.clone(), stamp))
    }

    /// The live entry's stamp (version and deadline), without its value.
    pub fn stamp(&self, key: &K) -> Result<Stamp> {
        self.table.read(key, self.clock.now(), |_, stamp| stamp)
    }

    /// Resets a live entry's deadline to `now + ttl`. [`Error::Expired`] once
    /// the deadline has passed, even if nothing has swept the entry yet.
    pub fn renew(&self, key: &K, ttl: Duration) -> Result<Stamp> {
        let now = self.clock.now();
        let deadline = self.deadline(now, ttl)?;
        self.table.renew(key, now, deadline, None)
    }

    /// [`renew`](Self::renew), only if the entry is still at `version`.
    pub fn renew_at(&self, key: &K, ttl: Duration, version: u64) -> Result<Stamp> {
        let now = self.clock.now();
        let deadline = self.deadline(now, ttl)?;
        self.table.renew(key, now, deadline, Some(version))
    }

    /// Removes a live entry and returns its value.
    pub fn remove(&self, key: &K) -> Result<V> {
        self.table
            .remove(key, self.clock.now(), None)
            .map(|(v, _)| v)
    }

    /// [`remove`](Self::remove), only if the entry is still at `version`.
    pub fn remove_at(&self, key: &K, version: u64) -> Result<V> {
        self.table
            .remove(key, self.clock.now(), Some(version))
            .map(|(v, _)| v)
    }

    /// Physically removes every expired entry, returned in
    /// `(deadline, key)` order.
    pub fn sweep(&self) -> Vec<Removed<K, V>> {
        let mut out = Vec::new();
        self.table.sweep(self.clock.now(), &mut out);
        out
    }

    /// Like [`sweep`](Self::sweep), appending to `out`; returns the count.
    pub fn sweep_into(&self, out: &mut Vec<Removed<K, V>>) -> usize {
        self.table.sweep(self.clock.now(), out)
    }

    /// Entries held (live, or expired and not yet swept).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no entries are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Admission units in use; equals [`len`](Self::len) when idle.
    pub fn admitted(&self) -> u64 {
        self.table.ceiling().used()
    }

    /// The configured ceiling.
    pub fn entries_max(&self) -> u64 {
        self.table.ceiling().limit()
    }

    /// Timer entries in the wheel; equals [`len`](Self::len) when idle.
    pub fn scheduled(&self) -> usize {
        self.table.scheduled()
    }

    /// How long ago (on the monotonic clock) the last sweep ran. A value
    /// above a few driver ticks means the driver has stalled.
    pub fn sweep_lag(&self) -> Duration {
        self.clock.now().saturating_since(self.table.swept_to())
    }

    /// The wall-clock time at which `stamp`'s deadline falls, for reporting.
    /// Wall-clock readings never influence expiry.
    pub fn expires_at(&self, stamp: &Stamp) -> SystemTime {
        let now = self.clock.now();
        self.clock.wall_at(now) + stamp.remaining(now)
    }

    /// The map's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Visits every held entry (including expired-but-unswept ones) with its
    /// stamp. Not a snapshot; meant for tests and diagnostics.
    pub fn for_each(&self, f: impl FnMut(&K, &V, Stamp)) {
        self.table.for_each(f);
    }
}
