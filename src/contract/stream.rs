//! Streams: per-tenant append-only logs with offsets, explicit retention,
//! and named consumers with committed offsets.
//!
//! An offset is issued once per stream and never reused or renumbered,
//! also across trims and a stream emptied by them. Retention is chosen at
//! creation ([`StreamConfig`]): entries, bytes and (optionally) age, and
//! what a full stream does ([`WhenFull`]), with no default that loses
//! data silently.
//!
//! Age-based trimming runs on a timing wheel of its own: a stream with an
//! age limit has at most one timer, due when its oldest entry comes of
//! age; the store's sweep fires it, trims, and sets the next one from the
//! new oldest entry. So aged entries give their memory back without
//! anyone reading the stream. Every call on the entries also trims what
//! is due first (`Stream::log_at`): nothing aged is ever returned or
//! counted, however late the sweep.
//!
//! Each stream has one mutex (rung `Stream`) over its log; the map of
//! streams is a concurrent map whose closures only clone the stream's
//! `Arc`. The age wheel's mutex (rung `Wheel`) is never taken while a log
//! or a map shard is held. Appends notify the stream's wake channel after
//! the lock is given up, so a follower woken by an append always reads it.

use crate::base::ids::LeaseId;
use std::sync::Arc;
use std::time::Duration;

/// What a full stream does with an append.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WhenFull {
    /// Refuse it with `CapacityExceeded` (scope `StreamEntries`, with the
    /// limit and use in entries, or in bytes when bytes are what is full);
    /// nothing is lost.
    Refuse,
    /// Trim the oldest entries until the new one fits.
    TrimOldest,
}

/// A stream's retention, chosen when it is created.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StreamConfig {
    /// Most entries held.
    pub entries_max: usize,
    /// Most payload bytes held (at most the store's `stream_bytes_max`).
    pub bytes_max: usize,
    /// Entries older than this are trimmed; `None` keeps them until the
    /// entry or byte limits apply.
    pub age_max: Option<Duration>,
    /// What an append to a full stream does.
    pub when_full: WhenFull,
    /// The lease the stream is attached to, if any: the stream is removed
    /// with it (removal event, cause `Cascaded`) and is not visible once
    /// the lease is not.
    pub lease: Option<LeaseId>,
}

impl StreamConfig {
    /// Retention by entries and bytes, with an explicit choice of what a
    /// full stream does.
    pub fn new(entries_max: usize, bytes_max: usize, when_full: WhenFull) -> Self {
        StreamConfig {
            entries_max,
            bytes_max,
            age_max: None,
            when_full,
            lease: None,
        }
    }

    /// The same, attached to `lease`: the stream lives no longer than the
    /// lease (at most `streams_per_lease_max` per lease).
    pub fn attached_to(mut self, lease: LeaseId) -> Self {
        self.lease = Some(lease);
        self
    }

    /// The same, also trimming entries older than `age_max`.
    pub fn with_age_max(mut self, age_max: Duration) -> Self {
        self.age_max = Some(age_max);
        self
    }
}

/// One entry of a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEntry {
    /// Its offset: strictly increasing in the stream, never reused.
    pub offset: u64,
    /// Its payload.
    pub payload: Arc<[u8]>,
}

/// What a stream holds, from [`Store::stream_info`](crate::Store::stream_info).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// The lowest offset still held (everything below was trimmed).
    pub first: u64,
    /// The offset the next append gets.
    pub next: u64,
    /// Entries held.
    pub entries: usize,
    /// Payload bytes held.
    pub bytes: usize,
    /// Named consumers with a committed offset.
    pub consumers: usize,
    /// Consumer groups.
    pub groups: usize,
}

/// What [`Store::read_stream`](crate::Store::read_stream) returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamRead {
    /// Entries from the requested offset on, in offset order.
    pub entries: Vec<StreamEntry>,
    /// The offset to read from next.
    pub next: u64,
}

/// Why an entry is refused whose payload alone is over its stream's
/// `bytes_max`.
pub(crate) const PAYLOAD_OVER_BYTES_MAX: &str = "payload is larger than the stream's bytes_max";

/// Why an offset past a stream's next one is refused.
pub(crate) const PAST_THE_END: &str = "offset is beyond the end of the stream";
