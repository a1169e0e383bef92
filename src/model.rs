//! Internals exposed only to the loom models (`--cfg relaystore_loom`).
//!
//! Nothing here is part of the public API. The fault switches turn one
//! correct step into its classic broken form so each model can prove that it
//! catches the bug it is about.

use crate::base::time::MonoTime;
pub use crate::mem::quota::{Counter, Reservation};
pub use crate::mem::record::Stamp;
use crate::mem::record::{Record, Versions};
use crate::mem::table::{Storage, Table, Timing};
use crate::mem::wheel::TimerHandle;
use std::sync::Arc;

/// The fault switches (they live with the code they break, so the engine
/// never imports this module).
pub use crate::base::faults;

/// One versioned record, for the CAS models.
pub struct ModelRecord(Record<()>);

impl ModelRecord {
    /// A record at version `version`, live until `deadline_ms`.
    pub fn new(version: u64, deadline_ms: u64) -> Self {
        ModelRecord(Record::new(
            version,
            deadline_ms,
            TimerHandle::NONE.to_bits(),
            (),
        ))
    }

    /// CAS the deadline to `deadline_ms` if the version is `expected`.
    pub fn set_deadline(&self, expected: u64, deadline_ms: u64) -> Result<Stamp, crate::Error> {
        self.0
            .transition(Some(expected), |_| Ok(deadline_ms))
            .map(|(_, after)| after)
            .map_err(|r| match r {
                crate::mem::record::Refusal::Error(e) => e,
                crate::mem::record::Refusal::SeqExhausted => unreachable!("fresh record"),
            })
    }

    /// CAS the deadline to `deadline_ms` at whatever version is current,
    /// retrying lost races (the bounded retry loop of `renew`).
    pub fn set_deadline_any(&self, deadline_ms: u64) -> Result<Stamp, crate::Error> {
        self.0
            .transition(None, |_| Ok(deadline_ms))
            .map(|(_, after)| after)
            .map_err(|r| match r {
                crate::mem::record::Refusal::Error(e) => e,
                crate::mem::record::Refusal::SeqExhausted => unreachable!("fresh record"),
            })
    }

    /// The current stamp.
    pub fn stamp(&self) -> Stamp {
        self.0.stamp()
    }
}

/// A slab of `u64`s, for the model of a visit racing a fill.
pub struct ModelSlab(crate::mem::slab::Slab<u64>);

impl ModelSlab {
    /// An empty slab.
    pub fn new() -> Self {
        ModelSlab(crate::mem::slab::Slab::new())
    }

    /// Claims a slot and stores `value` in it; its key.
    pub fn fill(&self, value: u64) -> u64 {
        let key = self.0.claim().expect("an empty slab has room");
        self.0
            .upsert(key, |_, _| crate::mem::shard::Upsert::Put(value, ()));
        key
    }

    /// Every value held, visiting slot by slot.
    pub fn visit(&self) -> Vec<u64> {
        let mut seen = Vec::new();
        self.0.for_each(|_, _, v| seen.push(*v));
        seen
    }
}

impl Default for ModelSlab {
    fn default() -> Self {
        Self::new()
    }
}

/// A named record's key in [`ModelNamed`]: one word.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct ModelKey(u64);

impl crate::mem::named_slab::SlotKey for ModelKey {
    fn key_words(&self) -> Option<[u64; crate::mem::named_slab::KEY_WORDS]> {
        Some([self.0, 0, 0, 0])
    }
}

impl crate::mem::named_slab::OwnedSlotKey for ModelKey {
    fn from_key_words(words: [u64; crate::mem::named_slab::KEY_WORDS]) -> Option<Self> {
        Some(ModelKey(words[0]))
    }
}

/// A named record's value, kept beside its slot for reads that take no
/// lock.
#[derive(Default)]
struct ModelValue(crate::base::sync::AtomicU64);

impl crate::mem::table::SlotWords<u64> for ModelValue {
    fn fill(&self, _: &crate::mem::record::Head, value: &mut u64) {
        self.0.store(*value, crate::base::sync::Ordering::Release);
    }
    fn empty(&self, _: &mut u64) {}
}

/// Named records in slab slots behind a name index (ADR 0078), for the
/// models of a read that takes no lock racing another name's reuse of
/// its slot and the index's rebuilds.
pub struct ModelNamed(crate::mem::named_slab::NamedSlab<ModelKey, u64, ModelValue>);

impl ModelNamed {
    /// No records.
    pub fn new() -> Self {
        ModelNamed(Storage::with_capacity(0))
    }

    /// Creates the record `name` with `value`.
    pub fn insert(&self, name: u64, value: u64) {
        self.0
            .upsert(ModelKey(name), |_, _| {
                crate::mem::shard::Upsert::Put(
                    Record::new(
                        1,
                        crate::base::time::DEADLINE_MAX_MS,
                        TimerHandle::NONE.to_bits(),
                        value,
                    ),
                    (),
                )
            })
            .expect("a model's slab has room");
    }

    /// Removes the record `name`; whether there was one.
    pub fn remove(&self, name: u64) -> bool {
        matches!(
            self.0
                .remove_if(&ModelKey(name), |_, _, _| Ok::<(), ()>(())),
            Some(Ok(_))
        )
    }

    /// The value of the record `name`, read without a lock.
    pub fn read(&self, name: u64) -> Option<u64> {
        use crate::mem::named_slab::Peeked;
        let read = self.0.peek(&ModelKey(name), |_, words| {
            Some(words.0.load(crate::base::sync::Ordering::Acquire))
        });
        match read {
            Peeked::Seen(value) => Some(value),
            Peeked::Missing => None,
            Peeked::Locked => unreachable!("a one-word key is kept beside its slot"),
        }
    }
}

impl Default for ModelNamed {
    fn default() -> Self {
        Self::new()
    }
}

/// A table keyed by `u64`, for the expiry models.
pub struct ModelTable(Table<u64, u64>);

impl ModelTable {
    /// An empty table with room for `capacity` records.
    pub fn new(capacity: u64) -> Self {
        ModelTable(Table::new(
            crate::Scope::Named("model"),
            capacity,
            Arc::new(Versions::new()),
            MonoTime::ZERO,
        ))
    }

    /// Inserts `key` live until `deadline_ms`.
    pub fn insert(&self, key: u64, now_ms: u64, deadline_ms: u64) -> Result<Stamp, crate::Error> {
        self.0
            .insert(key, key, MonoTime::from_millis(now_ms), deadline_ms)
            .map(|(s, _)| s)
    }

    /// Renews `key` to `deadline_ms` as seen at `now_ms`.
    pub fn renew(&self, key: u64, now_ms: u64, deadline_ms: u64) -> Result<Stamp, crate::Error> {
        renew_at(&self.0, key, now_ms, deadline_ms)
    }

    /// Sweeps at `now_ms`; returns the keys removed.
    pub fn sweep(&self, now_ms: u64) -> Vec<u64> {
        sweep_at(&self.0, now_ms)
    }

    /// The broken twin's sweep: decides from a state read before locking.
    pub fn sweep_check_then_act(&self, key: u64, now_ms: u64) -> Vec<u64> {
        self.0.stash_early_read(&key);
        self.sweep(now_ms)
    }

    /// The stamp of `key` if it is held (live or not).
    pub fn held(&self, key: u64) -> Option<Stamp> {
        let mut found = None;
        self.0.for_each(|k, _, s| {
            if *k == key {
                found = Some(s);
            }
        });
        found
    }

    /// Records held, admission units in use, and wheel entries.
    pub fn counts(&self) -> (usize, u64, usize) {
        (self.0.len(), self.0.ceiling().used(), self.0.scheduled())
    }
}

/// Renews `key` in either model table.
fn renew_at<S, L>(
    table: &Table<u64, u64, S, L>,
    key: u64,
    now_ms: u64,
    deadline_ms: u64,
) -> Result<Stamp, crate::Error>
where
    S: Storage<u64, u64> + crate::mem::table::Placed<Place = u64>,
    L: Timing<u64>,
{
    table.renew(&key, MonoTime::from_millis(now_ms), deadline_ms, None)
}

/// Sweeps either model table; the keys removed.
fn sweep_at<S, L>(table: &Table<u64, u64, S, L>, now_ms: u64) -> Vec<u64>
where
    S: Storage<u64, u64> + crate::mem::table::Placed<Place = u64>,
    L: Timing<u64>,
{
    let mut out = Vec::new();
    table.sweep(MonoTime::from_millis(now_ms), &mut out);
    out.into_iter().map(|r| r.key).collect()
}

/// A table whose keys it issues (a slab table, whose wheel names a
/// record's entry by key and due), for the expiry models.
pub struct ModelSlabTable(crate::mem::table::SlabTable<u64>);

impl ModelSlabTable {
    /// An empty table with room for `capacity` records.
    pub fn new(capacity: u64) -> Self {
        ModelSlabTable(Table::new(
            crate::Scope::Named("model"),
            capacity,
            Arc::new(Versions::new()),
            MonoTime::ZERO,
        ))
    }

    /// Creates a record live until `deadline_ms`; returns its key.
    pub fn insert(&self, now_ms: u64, deadline_ms: u64) -> Result<u64, crate::Error> {
        self.0.with_key(|key| {
            self.0
                .insert(key, key, MonoTime::from_millis(now_ms), deadline_ms)
                .map(|_| key)
        })
    }

    /// Renews `key` to `deadline_ms` as seen at `now_ms`.
    pub fn renew(&self, key: u64, now_ms: u64, deadline_ms: u64) -> Result<Stamp, crate::Error> {
        renew_at(&self.0, key, now_ms, deadline_ms)
    }

    /// Sweeps at `now_ms`; returns the keys removed.
    pub fn sweep(&self, now_ms: u64) -> Vec<u64> {
        sweep_at(&self.0, now_ms)
    }

    /// Records held, live wheel entries, and stale ones still held.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.0.len(), self.0.scheduled(), self.0.stale_timers())
    }
}

/// A value of two words, whole when its halves are equal.
struct ModelPair(u64, u64);

impl crate::base::words::Words for ModelPair {
    const LEN: usize = 2;

    fn put(&self, out: &mut [u64]) {
        out.copy_from_slice(&[self.0, self.1]);
    }

    fn get(words: &[u64]) -> Self {
        ModelPair(words[0], words[1])
    }
}

/// A word snapshot of two words, for the snapshot models.
pub struct ModelWords(crate::base::words::WordSnapshot<ModelPair>);

impl ModelWords {
    /// A snapshot holding `(v, v)`.
    pub fn new(v: u64) -> Self {
        ModelWords(crate::base::words::WordSnapshot::new(ModelPair(v, v)))
    }

    /// Replaces the value with `(v, v)`.
    pub fn store(&self, v: u64) {
        self.0.store(ModelPair(v, v));
    }

    /// Reads the value.
    pub fn read(&self) -> (u64, u64) {
        self.0.read(|p| (p.0, p.1))
    }

    /// Reads the value's words, second first.
    pub fn read_words(&self) -> (u64, u64) {
        let [b, a] = self.0.read_words([1, 0]);
        (a, b)
    }
}
