//! The store's side of consumer groups (`src/coord/group.rs`): names, the
//! clock, and the stream's lifecycle. What a group promises is the
//! contract's (`contract/group.rs`).

use crate::base::error::Result;
use crate::base::ids::TenantId;
use crate::base::sync::Arc;
use crate::base::time::duration_to_millis_ceil;
use crate::contract::group::{Claimed, GroupConfig, GroupInfo, GroupRead, PendingEntry};
use crate::contract::names::stream_wake_channel as wake_channel;
use crate::mem::wake::Listener;
#[cfg(feature = "native")]
use crate::store::mechanisms::streams::blocking_read_until;
use crate::store::mechanisms::streams::read_until;
use crate::store::Store;
use std::time::Duration;

impl Store {
    /// Creates consumer group `group` on stream `name`, reading from
    /// `config.start` on. Creating it again with the same settings is a
    /// no-op; with other settings, [`Error::Exists`](crate::Error::Exists).
    /// Refused with `InvalidArgument` for a `pending_max` of 0 or above
    /// `stream_entries_max`, a `deliveries_max` of 0 or a start past the
    /// stream's next offset, and with `CapacityExceeded`
    /// (`StreamConsumers`) when the stream has `consumers_per_stream_max`
    /// named consumers and groups together. The group lives as long as
    /// its stream.
    pub fn create_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        config: GroupConfig,
    ) -> Result<()> {
        let _in = self.enter();
        self.check_own_name(name)?;
        let group = self.name(group)?;
        let now = self.shared.clock.now();
        let created = self.shared.streams.create_group(
            (tenant, name),
            &self.alive(tenant),
            group,
            config,
            now,
        );
        self.observed(tenant, created)
    }

    /// Deletes consumer group `group` of stream `name` with its pending
    /// list; `NotFound` if there is none.
    pub fn delete_group(&self, tenant: TenantId, name: &str, group: &str) -> Result<()> {
        let _in = self.enter();
        self.check_own_name(name)?;
        self.check_name(group)?;
        self.shared
            .streams
            .delete_group((tenant, name), &self.alive(tenant), group)
    }

    /// Delivers up to `max` (at most `page_len_max`) entries from the
    /// group's position on to `member`, in offset order, and puts them on
    /// the group's pending list. `CapacityExceeded`
    /// (`StreamGroupPending`) when the list holds `pending_max` entries;
    /// `InvalidArgument` for a `max` of 0. Entries trimmed away before the
    /// group read them are passed over and counted in
    /// [`GroupRead::skipped`].
    pub fn read_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
        max: usize,
    ) -> Result<GroupRead> {
        let _in = self.enter();
        self.check_own_name(name)?;
        self.check_name(group)?;
        let member = self.name(member)?;
        let max = self.shared.config.group_batch(max)?;
        let now = self.shared.clock.now();
        let read = self.shared.streams.read_group(
            (tenant, name),
            &self.alive(tenant),
            (group, &member),
            max,
            now,
        );
        self.observed(tenant, read)
    }

    /// Removes `offsets` (1 to `page_len_max`) from the group's pending
    /// list, pending or dead; returns how many it held (others are left
    /// alone).
    pub fn ack_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        offsets: &[u64],
    ) -> Result<usize> {
        let _in = self.enter();
        self.check_own_name(name)?;
        self.check_name(group)?;
        self.shared.config.check_group_acks(offsets.len())?;
        self.shared
            .streams
            .ack_group((tenant, name), &self.alive(tenant), group, offsets)
    }

    /// Takes over up to `max` (at most `page_len_max`) pending entries
    /// idle for at least `min_idle` for `member`, the longest idle first:
    /// each is delivered to `member` once more, or marked dead if it was
    /// delivered `deliveries_max` times, or leaves the list if the stream
    /// trimmed it away ([`Claimed`]).
    pub fn claim_idle(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
        min_idle: Duration,
        max: usize,
    ) -> Result<Claimed> {
        let _in = self.enter();
        self.check_own_name(name)?;
        self.check_name(group)?;
        let member = self.name(member)?;
        let max = self.shared.config.group_batch(max)?;
        let now = self.shared.clock.now();
        self.shared.streams.claim_idle(
            (tenant, name),
            &self.alive(tenant),
            (group, &member),
            (duration_to_millis_ceil(min_idle), max),
            now,
        )
    }

    /// Up to `max` (at most `page_len_max`) entries of the group's pending
    /// list from offset `from` on, in offset order: each with its member,
    /// deliveries, idle time and whether it is dead.
    pub fn pending(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        from: u64,
        max: usize,
    ) -> Result<Vec<PendingEntry>> {
        self.check_own_name(name)?;
        self.check_name(group)?;
        let max = self.shared.config.page_cap(max);
        self.consistent(|| {
            let now = self.shared.clock.now();
            self.shared.streams.pending(
                (tenant, name),
                &self.alive(tenant),
                group,
                (from, max),
                now,
            )
        })
    }

    /// What the group holds: its position, pending and dead entries, and
    /// its settings.
    pub fn group_info(&self, tenant: TenantId, name: &str, group: &str) -> Result<GroupInfo> {
        self.check_own_name(name)?;
        self.check_name(group)?;
        self.consistent(|| {
            let now = self.shared.clock.now();
            self.shared
                .streams
                .group_info((tenant, name), &self.alive(tenant), group, now)
        })
    }

    /// Reads group `group` of stream `name` as `member`, waiting for
    /// appends without polling ([`Member::next`]). The member listens for
    /// appends before anything is read, so it misses no entry; `NotFound`
    /// if the stream has no such group. Takes one of the store's
    /// listeners (`listeners_max`).
    pub fn join_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
    ) -> Result<Member> {
        let stream = self.stream_name(name)?;
        let group = self.name(group)?;
        let member = self.name(member)?;
        let listening = self
            .shared
            .wakes
            .listen_coalescing(tenant, wake_channel(&stream));
        let wakes = self.observed(tenant, listening)?;
        self.group_info(tenant, &stream, &group)?;
        Ok(Member {
            store: self.clone(),
            tenant,
            stream,
            group,
            member,
            wakes,
        })
    }
}

/// Whether a group read has something to return: entries, or offsets it
/// passed over.
fn delivered(read: &GroupRead) -> bool {
    !read.entries.is_empty() || read.skipped > 0
}

/// A member of a consumer group: reads new entries as they are appended,
/// without polling, and acknowledges and takes over entries as that
/// member. From [`Store::join_group`].
#[derive(Debug)]
pub struct Member {
    store: Store,
    tenant: TenantId,
    stream: Arc<str>,
    group: Arc<str>,
    member: Arc<str>,
    wakes: Listener,
}

impl Member {
    /// Up to `max` new entries, without waiting (possibly none), as
    /// [`Store::read_group`].
    pub fn try_next(&self, max: usize) -> Result<GroupRead> {
        self.store
            .read_group(self.tenant, &self.stream, &self.group, &self.member, max)
    }

    /// Waits, as a future for any executor, until the group has at least
    /// one new entry and delivers up to `max` to this member (a read that
    /// only passed over trimmed offsets returns too, with them counted).
    /// `CapacityExceeded` (`StreamGroupPending`) at once while the
    /// pending list is full; `ServiceUnavailable` once the store has
    /// stopped or is gone. Cancel-safe: entries are delivered only when
    /// returned.
    pub async fn next(&self, max: usize) -> Result<GroupRead> {
        read_until(&self.wakes, || self.try_next(max), delivered).await
    }

    #[cfg(feature = "native")]
    /// [`next`](Self::next), blocking the calling thread, for at most
    /// `timeout` (`None`: until an entry comes); an empty read if none
    /// came. Never call it on an async runtime's worker thread.
    pub fn blocking_next(&self, max: usize, timeout: Option<Duration>) -> Result<GroupRead> {
        blocking_read_until(&self.wakes, timeout, || self.try_next(max), delivered)
    }

    /// Acknowledges `offsets` ([`Store::ack_group`]).
    pub fn ack(&self, offsets: &[u64]) -> Result<usize> {
        self.store
            .ack_group(self.tenant, &self.stream, &self.group, offsets)
    }

    /// Takes over entries idle for at least `min_idle` for this member
    /// ([`Store::claim_idle`]).
    pub fn claim_idle(&self, min_idle: Duration, max: usize) -> Result<Claimed> {
        self.store.claim_idle(
            self.tenant,
            &self.stream,
            &self.group,
            &self.member,
            min_idle,
            max,
        )
    }
}
