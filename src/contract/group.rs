//! Consumer groups of a stream (SPEC §10), as Redis Streams users know
//! them: a group shares one stream among its members. Each entry is
//! delivered to one member and stays on the group's pending list, with its
//! member and how often it was delivered, until it is acknowledged. A
//! member that dies leaves its entries pending; another member takes them
//! over once they have been idle long enough, and an entry delivered
//! `deliveries_max` times is marked dead instead of delivered again.
//!
//! Every engine keeps these rules:
//!
//! - A group reads from its own position on (`GroupInfo::next`), which
//!   starts where [`GroupStart`] says and only moves forward. Each read
//!   delivers entries in offset order and puts each on the pending list
//!   (one delivery, to the reading member, idle from now).
//! - Entries trimmed away before the group read them are passed over and
//!   counted ([`GroupRead::skipped`]); a group never stops at a trim.
//! - The pending list holds at most `pending_max` entries, dead ones
//!   included. A read with a full list is refused with `CapacityExceeded`
//!   (scope `StreamGroupPending`); a read with some room delivers at most
//!   that many.
//! - An acknowledgement removes an entry from the pending list, pending or
//!   dead; offsets the list does not hold are left alone and not counted.
//! - [`claim_idle`](crate::StreamEngine::claim_idle) looks at the entries
//!   idle for at least `min_idle`, the longest idle first (the lowest
//!   offset first among equals), and for each of at most `max`: an entry
//!   trimmed away leaves the list (reported in [`Claimed::trimmed`]); one
//!   delivered `deliveries_max` times already is marked dead (reported in
//!   [`Claimed::dead`], never delivered again, still on the list until
//!   acknowledged); any other is delivered to the claiming member once
//!   more.
//! - Idle time is measured on the engine's clock, in whole milliseconds.
//! - Named consumers and groups together are at most
//!   `consumers_per_stream_max` per stream (scope `StreamConsumers`).
//!
//! Groups live and die with their stream, and are not part of
//! transactions.

use crate::base::name::Name;
use std::sync::Arc;
use std::time::Duration;

/// Where a new group starts reading.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum GroupStart {
    /// At the lowest offset the stream holds at creation.
    Oldest,
    /// At the stream's next offset: only entries appended after the
    /// creation.
    End,
    /// At this offset (at most the stream's next one; below its first,
    /// the first read passes over what was trimmed).
    At(u64),
}

/// A consumer group's settings, chosen when it is created.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupConfig {
    /// Where the group starts reading.
    pub start: GroupStart,
    /// Most entries on the pending list, dead ones included (1 to the
    /// store's `stream_entries_max`).
    pub pending_max: usize,
    /// Most deliveries of one entry: an idle entry delivered this many
    /// times is marked dead instead of delivered again (at least 1).
    pub deliveries_max: u32,
}

impl GroupConfig {
    /// A group starting at `start`, with at most `pending_max` entries
    /// pending and at most `deliveries_max` deliveries per entry.
    pub fn new(start: GroupStart, pending_max: usize, deliveries_max: u32) -> Self {
        GroupConfig {
            start,
            pending_max,
            deliveries_max,
        }
    }
}

/// An entry delivered to a member of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupEntry {
    /// Its offset in the stream.
    pub offset: u64,
    /// Its payload.
    pub payload: Arc<[u8]>,
    /// How often it was delivered in this group, this delivery included.
    pub deliveries: u32,
}

/// What [`read_group`](crate::StreamEngine::read_group) returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRead {
    /// The entries delivered, in offset order, now pending for the member.
    pub entries: Vec<GroupEntry>,
    /// Offsets passed over because they were trimmed away before the
    /// group read them.
    pub skipped: u64,
}

/// What [`claim_idle`](crate::StreamEngine::claim_idle) returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claimed {
    /// The entries delivered to the claiming member, the longest idle
    /// first.
    pub entries: Vec<GroupEntry>,
    /// Entries marked dead by this call: delivered `deliveries_max` times
    /// already. They stay on the pending list until acknowledged.
    pub dead: Vec<u64>,
    /// Pending entries trimmed away from the stream: they left the list.
    pub trimmed: Vec<u64>,
}

/// One entry of a group's pending list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    /// Its offset in the stream.
    pub offset: u64,
    /// The member it was last delivered to.
    pub member: Name,
    /// How often it was delivered.
    pub deliveries: u32,
    /// Time since its last delivery (whole milliseconds).
    pub idle: Duration,
    /// Marked dead: it is never delivered again.
    pub dead: bool,
}

/// What a group holds, from [`group_info`](crate::StreamEngine::group_info).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupInfo {
    /// The offset the group's next read starts at.
    pub next: u64,
    /// Entries pending (delivered, not acknowledged, not dead).
    pub pending: usize,
    /// Entries marked dead and not acknowledged yet.
    pub dead: usize,
    /// The settings it was created with.
    pub config: GroupConfig,
}

/// Why a group start past the stream's next offset is refused.
pub(crate) const START_PAST_THE_END: &str = "a group's start is beyond the end of the stream";
