//! The in-memory consumer group: one group's position and pending list,
//! kept under its stream's lock (`coord/stream.rs`). The rules are the
//! contract's (`contract/group.rs`); this is how the in-memory engine
//! keeps them.
//!
//! The pending list is a map by offset (for acknowledgements and the
//! offset-ordered listing) beside an index of the live entries by last
//! delivery (for idle claims, the longest idle first), so a claim looks at
//! no entry it does not take.

use crate::base::error::{Error, Result, Scope};
use crate::base::name::Name;
use crate::base::sync::Arc;
use crate::base::time::MonoTime;
use crate::contract::group::{
    Claimed, GroupConfig, GroupEntry, GroupInfo, GroupRead, GroupStart, PendingEntry,
    START_PAST_THE_END,
};
use crate::contract::stream::StreamEntry;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

/// A stream's entries as its log holds them: in offset order, each with
/// its append time.
pub(crate) type Entries = VecDeque<(StreamEntry, MonoTime)>;

#[derive(Debug)]
struct Pending {
    member: Arc<str>,
    deliveries: u32,
    /// The last delivery, in milliseconds of the store's clock.
    at: u64,
    dead: bool,
}

#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) config: GroupConfig,
    next: u64,
    pending: BTreeMap<u64, Pending>,
    /// The live (not dead) pending entries by (last delivery, offset).
    idle: BTreeSet<(u64, u64)>,
    dead: usize,
}

/// The entry at `offset`, if the stream holds it.
fn entry_at(entries: &Entries, offset: u64) -> Option<&StreamEntry> {
    let at = entries.partition_point(|(e, _)| e.offset < offset);
    entries
        .get(at)
        .map(|(e, _)| e)
        .filter(|e| e.offset == offset)
}

impl Group {
    /// A new group on a stream whose first offset held is `first` and next
    /// one `next`.
    pub(crate) fn new(config: GroupConfig, first: u64, next: u64) -> Result<Group> {
        let start = match config.start {
            GroupStart::Oldest => first,
            GroupStart::End => next,
            GroupStart::At(offset) if offset > next => {
                return Err(Error::InvalidArgument {
                    reason: START_PAST_THE_END,
                })
            }
            GroupStart::At(offset) => offset,
        };
        Ok(Group {
            config,
            next: start,
            pending: BTreeMap::new(),
            idle: BTreeSet::new(),
            dead: 0,
        })
    }

    /// Delivers up to `max` entries from the group's position on to
    /// `member` at `now` (milliseconds); `first` is the stream's first
    /// offset held.
    pub(crate) fn read(
        &mut self,
        entries: &Entries,
        first: u64,
        member: &Arc<str>,
        max: usize,
        now: u64,
    ) -> Result<GroupRead> {
        let held = self.pending.len();
        if held >= self.config.pending_max {
            return Err(Error::capacity(
                Scope::StreamGroupPending,
                self.config.pending_max as u64,
                held as u64,
            ));
        }
        let mut skipped = 0;
        if self.next < first {
            skipped = first - self.next;
            self.next = first;
        }
        let room = max.min(self.config.pending_max - held);
        let from = entries.partition_point(|(e, _)| e.offset < self.next);
        let delivered: Vec<GroupEntry> = entries
            .iter()
            .skip(from)
            .take(room)
            .map(|(e, _)| GroupEntry {
                offset: e.offset,
                payload: Arc::clone(&e.payload),
                deliveries: 1,
            })
            .collect();
        for e in &delivered {
            self.pending.insert(
                e.offset,
                Pending {
                    member: Arc::clone(member),
                    deliveries: 1,
                    at: now,
                    dead: false,
                },
            );
            self.idle.insert((now, e.offset));
        }
        if let Some(last) = delivered.last() {
            self.next = last.offset + 1;
        }
        Ok(GroupRead {
            entries: delivered,
            skipped,
        })
    }

    /// Removes `offsets` from the pending list; returns how many it held.
    pub(crate) fn ack(&mut self, offsets: &[u64]) -> usize {
        let mut acked = 0;
        for offset in offsets {
            if let Some(p) = self.pending.remove(offset) {
                acked += 1;
                if p.dead {
                    self.dead -= 1;
                } else {
                    self.idle.remove(&(p.at, *offset));
                }
            }
        }
        acked
    }

    /// Takes over up to `max` entries idle for at least `min_idle` ms at
    /// `now` for `member` (the contract's order and outcomes).
    pub(crate) fn claim(
        &mut self,
        entries: &Entries,
        first: u64,
        member: &Arc<str>,
        min_idle: u64,
        max: usize,
        now: u64,
    ) -> Claimed {
        // Nothing has been idle for longer than the clock has run.
        let Some(cut) = now.checked_sub(min_idle) else {
            return Claimed::default();
        };
        let due: Vec<(u64, u64)> = self
            .idle
            .range(..=(cut, u64::MAX))
            .take(max)
            .copied()
            .collect();
        let mut claimed = Claimed::default();
        for (at, offset) in due {
            self.idle.remove(&(at, offset));
            let entry = (offset >= first)
                .then(|| entry_at(entries, offset))
                .flatten();
            let Some(entry) = entry else {
                self.pending.remove(&offset);
                claimed.trimmed.push(offset);
                continue;
            };
            let Some(p) = self.pending.get_mut(&offset) else {
                continue;
            };
            if p.deliveries >= self.config.deliveries_max {
                p.dead = true;
                self.dead += 1;
                claimed.dead.push(offset);
                continue;
            }
            p.deliveries += 1;
            p.member = Arc::clone(member);
            p.at = now;
            self.idle.insert((now, offset));
            claimed.entries.push(GroupEntry {
                offset,
                payload: Arc::clone(&entry.payload),
                deliveries: p.deliveries,
            });
        }
        claimed
    }

    /// Up to `max` entries of the pending list from offset `from` on, at
    /// `now` (milliseconds).
    pub(crate) fn pending(&self, from: u64, max: usize, now: u64) -> Vec<PendingEntry> {
        self.pending
            .range(from..)
            .take(max)
            .map(|(&offset, p)| PendingEntry {
                offset,
                member: Name::new(&p.member),
                deliveries: p.deliveries,
                idle: Duration::from_millis(now.saturating_sub(p.at)),
                dead: p.dead,
            })
            .collect()
    }

    pub(crate) fn info(&self) -> GroupInfo {
        GroupInfo {
            next: self.next,
            pending: self.pending.len() - self.dead,
            dead: self.dead,
            config: self.config,
        }
    }

    /// The first difference between the pending list and its idle index
    /// and dead count, or a list over its bound or a position past the
    /// stream's `next`.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn audit(&self, next: u64) -> std::result::Result<(), String> {
        let live: BTreeSet<(u64, u64)> = self
            .pending
            .iter()
            .filter(|(_, p)| !p.dead)
            .map(|(&o, p)| (p.at, o))
            .collect();
        let dead = self.pending.values().filter(|p| p.dead).count();
        if live != self.idle {
            return Err("the idle index differs from the live pending entries".into());
        }
        if dead != self.dead {
            return Err(format!("{dead} dead entries, {} counted", self.dead));
        }
        if self.pending.len() > self.config.pending_max {
            return Err("the pending list is over pending_max".into());
        }
        if self.next > next || self.pending.keys().any(|&o| o >= self.next) {
            return Err("the group's position is past the stream's or an entry it holds".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(offsets: std::ops::Range<u64>) -> Entries {
        offsets
            .map(|o| {
                let e = StreamEntry {
                    offset: o,
                    payload: Arc::from(&[o as u8][..]),
                };
                (e, MonoTime::ZERO)
            })
            .collect()
    }

    fn offsets(delivered: &[GroupEntry]) -> Vec<u64> {
        delivered.iter().map(|e| e.offset).collect()
    }

    #[test]
    fn a_group_reads_claims_and_buries() {
        let log = entries(0..5);
        let config = GroupConfig::new(GroupStart::Oldest, 3, 2);
        let mut g = Group::new(config, 0, 5).unwrap();
        let a: Arc<str> = Arc::from("a");
        let b: Arc<str> = Arc::from("b");
        let read = g.read(&log, 0, &a, 10, 100).unwrap();
        assert_eq!(offsets(&read.entries), vec![0, 1, 2], "at most pending_max");
        assert_eq!(
            g.read(&log, 0, &a, 10, 100),
            Err(Error::capacity(Scope::StreamGroupPending, 3, 3))
        );
        assert_eq!(g.ack(&[1, 7]), 1, "only what the list holds counts");
        // Idle since 100: not at 149 for 50 ms, then 0 and 2 in order.
        assert!(g.claim(&log, 0, &b, 50, 10, 149).entries.is_empty());
        let claimed = g.claim(&log, 0, &b, 50, 10, 150);
        assert_eq!(offsets(&claimed.entries), vec![0, 2]);
        assert!(claimed.entries.iter().all(|e| e.deliveries == 2));
        // Delivered twice: the next idle claim buries them.
        let claimed = g.claim(&log, 0, &a, 0, 1, 200);
        assert_eq!((claimed.entries.len(), claimed.dead), (0, vec![0]));
        let info = g.info();
        assert_eq!((info.pending, info.dead, info.next), (1, 1, 3));
        let listed = g.pending(0, 10, 210);
        assert_eq!(listed[0].member.as_str(), "b");
        assert!(listed[0].dead && !listed[1].dead);
        assert_eq!(listed[1].idle, Duration::from_millis(60));
        g.audit(5).unwrap();
        assert_eq!(g.ack(&[0]), 1, "a dead entry is acknowledged too");
        g.audit(5).unwrap();
    }

    #[test]
    fn nothing_is_idle_for_longer_than_the_clock_has_run() {
        let log = entries(0..1);
        let mut g = Group::new(GroupConfig::new(GroupStart::Oldest, 3, 2), 0, 1).unwrap();
        let a: Arc<str> = Arc::from("a");
        g.read(&log, 0, &a, 1, 0).unwrap();
        assert!(g.claim(&log, 0, &a, 1000, 1, 999).entries.is_empty());
        assert_eq!(
            offsets(&g.claim(&log, 0, &a, 1000, 1, 1000).entries),
            vec![0]
        );
    }

    #[test]
    fn trims_are_passed_over_and_reported() {
        let mut g = Group::new(GroupConfig::new(GroupStart::At(1), 10, 5), 0, 4).unwrap();
        let a: Arc<str> = Arc::from("a");
        g.read(&entries(0..4), 0, &a, 1, 0).unwrap();
        // Offsets 0 to 2 trimmed: 1 is pending, 2 was never read.
        let read = g.read(&entries(3..4), 3, &a, 10, 0).unwrap();
        assert_eq!((offsets(&read.entries), read.skipped), (vec![3], 1));
        let claimed = g.claim(&entries(3..4), 3, &a, 0, 10, 0);
        assert_eq!(claimed.trimmed, vec![1]);
        assert_eq!(offsets(&claimed.entries), vec![3]);
        g.audit(4).unwrap();
        assert_eq!(
            Group::new(GroupConfig::new(GroupStart::At(5), 1, 1), 0, 4).err(),
            Some(Error::InvalidArgument {
                reason: START_PAST_THE_END
            })
        );
    }
}
