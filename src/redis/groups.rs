//! Consumer groups on Redis (contract/group.rs has the rules): each
//! transition is one function on the stream's tenant slot
//! (`lua/shared/70_streams.lua` has the layout), idle times from the server's
//! clock.

use super::reply::Reply;
use super::{scripts, Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::TenantId;
use crate::base::name::Name;
use crate::base::time::duration_to_millis_ceil;
use crate::contract::engine::GroupMember;
use crate::contract::group::{
    Claimed, GroupConfig, GroupEntry, GroupInfo, GroupRead, GroupStart, PendingEntry,
};
use crate::contract::names::stream_wake_channel as wake_channel;
use crate::mem::wake::Listener;
use std::sync::Arc;
use std::time::Duration;

/// A group's start as `create_group.lua` takes it: 'o' (oldest), 'e'
/// (end) or an offset.
fn start(config: &GroupConfig) -> String {
    match config.start {
        GroupStart::Oldest => "o".to_owned(),
        GroupStart::End => "e".to_owned(),
        GroupStart::At(offset) => offset.to_string(),
    }
}

/// A group's settings as `sg:` holds them:
/// `"<pending_max>/<deliveries_max>/<start>"`.
fn settings(config: &GroupConfig) -> String {
    format!(
        "{}/{}/{}",
        config.pending_max,
        config.deliveries_max,
        start(config)
    )
}

/// The settings [`settings`] wrote.
fn parse_settings(text: &str) -> Result<GroupConfig> {
    let malformed = || Error::backend(format!("malformed group settings {text:?}"), true);
    let mut parts = text.splitn(3, '/');
    let mut field = || parts.next().ok_or_else(malformed);
    let pending_max = field()?.parse().map_err(|_| malformed())?;
    let deliveries_max = field()?.parse().map_err(|_| malformed())?;
    let start = match field()? {
        "o" => GroupStart::Oldest,
        "e" => GroupStart::End,
        offset => GroupStart::At(offset.parse().map_err(|_| malformed())?),
    };
    Ok(GroupConfig::new(start, pending_max, deliveries_max))
}

/// `count` (offset, deliveries, payload) triples of `reply` from `at` on.
fn delivered(reply: &Reply, at: usize, count: usize) -> Result<Vec<GroupEntry>> {
    (0..count)
        .map(|i| {
            let at = at + 3 * i;
            Ok(GroupEntry {
                offset: reply.uint(at)?,
                deliveries: u32::try_from(reply.uint(at + 1)?).unwrap_or(u32::MAX),
                payload: reply.bytes(at + 2)?,
            })
        })
        .collect()
}

/// A count of `reply` at `at`, then that many offsets: the offsets and
/// where the reply goes on.
fn offsets(reply: &Reply, at: usize) -> Result<(Vec<u64>, usize)> {
    let count = usize::try_from(reply.uint(at)?).unwrap_or(usize::MAX);
    let list = (0..count)
        .map(|i| reply.uint(at + 1 + i))
        .collect::<Result<_>>()?;
    Ok((list, at + 1 + count))
}

impl RedisEngine {
    /// Creates consumer group `group` on stream `name`
    /// ([`Store::create_group`](crate::Store::create_group) has every
    /// rule).
    pub async fn create_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        config: GroupConfig,
    ) -> Result<()> {
        self.check_name(group)?;
        self.inner.stream_limits.check_group(&config)?;
        let args = scripts::CreateGroupArgs {
            name: name.into(),
            group: group.into(),
            settings: settings(&config).into(),
            start: start(&config).into(),
            consumers_max: self.inner.stream_limits.consumers_max.into(),
        }
        .encode();
        self.stream_call(scripts::CREATE_GROUP, tenant, name, args)
            .await
            .map(drop)
    }

    /// Deletes consumer group `group` of stream `name` with its pending
    /// list.
    pub async fn delete_group(&self, tenant: TenantId, name: &str, group: &str) -> Result<()> {
        self.check_name(group)?;
        let args = scripts::DeleteGroupArgs {
            name: name.into(),
            group: group.into(),
        }
        .encode();
        self.stream_call(scripts::DELETE_GROUP, tenant, name, args)
            .await
            .map(drop)
    }

    /// Delivers up to `max` new entries of the group to `member`
    /// ([`Store::read_group`](crate::Store::read_group)).
    pub async fn read_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
        max: usize,
    ) -> Result<GroupRead> {
        self.check_name(group)?;
        self.check_name(member)?;
        let max = self.config().group_batch(max)?;
        let args = scripts::ReadGroupArgs {
            name: name.into(),
            group: group.into(),
            member: member.into(),
            most: max.into(),
        }
        .encode();
        let reply = self
            .stream_call(scripts::READ_GROUP, tenant, name, args)
            .await?;
        let r = scripts::ReadGroupReply::decode(&reply)?;
        let entries = r
            .each
            .into_iter()
            .zip(r.first..)
            .map(|(entry, offset)| GroupEntry {
                offset,
                payload: entry.payload,
                deliveries: 1,
            })
            .collect();
        Ok(GroupRead {
            entries,
            skipped: r.skipped,
        })
    }

    /// Acknowledges `offsets` in the group; returns how many its pending
    /// list held ([`Store::ack_group`](crate::Store::ack_group)).
    pub async fn ack_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        offsets: &[u64],
    ) -> Result<usize> {
        self.check_name(group)?;
        self.config().check_group_acks(offsets.len())?;
        let args = scripts::AckGroupArgs {
            name: name.into(),
            group: group.into(),
            offsets: offsets.iter().map(|&o| o.into()).collect(),
        }
        .encode();
        let reply = self
            .stream_call(scripts::ACK_GROUP, tenant, name, args)
            .await?;
        let acked = scripts::AckGroupReply::decode(&reply)?.acked;
        Ok(usize::try_from(acked).unwrap_or(usize::MAX))
    }

    /// Takes over idle pending entries for `member`
    /// ([`Store::claim_idle`](crate::Store::claim_idle)).
    pub async fn claim_idle(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
        min_idle: Duration,
        max: usize,
    ) -> Result<Claimed> {
        self.check_name(group)?;
        self.check_name(member)?;
        let max = self.config().group_batch(max)?;
        let args = scripts::ClaimIdleArgs {
            name: name.into(),
            group: group.into(),
            member: member.into(),
            min_idle: duration_to_millis_ceil(min_idle).into(),
            most: max.into(),
        }
        .encode();
        let reply = self
            .stream_call(scripts::CLAIM_IDLE, tenant, name, args)
            .await?;
        let count = usize::try_from(reply.uint(1)?).unwrap_or(usize::MAX);
        let entries = delivered(&reply, 2, count)?;
        let (dead, at) = offsets(&reply, 2 + 3 * count)?;
        let (trimmed, _) = offsets(&reply, at)?;
        Ok(Claimed {
            entries,
            dead,
            trimmed,
        })
    }

    /// The group's pending list from offset `from` on
    /// ([`Store::pending`](crate::Store::pending)).
    pub async fn pending(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        from: u64,
        max: usize,
    ) -> Result<Vec<PendingEntry>> {
        self.check_name(group)?;
        let max = self.config().page_cap(max);
        let args = scripts::PendingArgs {
            name: name.into(),
            group: group.into(),
            from: from.into(),
            most: max.into(),
        }
        .encode();
        let reply = self
            .stream_call(scripts::PENDING, tenant, name, args)
            .await?;
        Ok(scripts::PendingReply::decode(&reply)?
            .each
            .into_iter()
            .map(|p| PendingEntry {
                offset: p.offset,
                deliveries: u32::try_from(p.deliveries).unwrap_or(u32::MAX),
                idle: p.idle,
                dead: p.dead == 1,
                member: Name::new(&p.member),
            })
            .collect())
    }

    /// What the group holds ([`Store::group_info`](crate::Store::group_info)).
    pub async fn group_info(&self, tenant: TenantId, name: &str, group: &str) -> Result<GroupInfo> {
        self.check_name(group)?;
        let reply = self
            .stream_call(
                scripts::GROUP_INFO,
                tenant,
                name,
                scripts::GroupInfoArgs {
                    name: name.into(),
                    group: group.into(),
                }
                .encode(),
            )
            .await?;
        let r = scripts::GroupInfoReply::decode(&reply)?;
        let held = usize::try_from(r.held).unwrap_or(usize::MAX);
        let live = usize::try_from(r.live).unwrap_or(usize::MAX);
        Ok(GroupInfo {
            next: r.next,
            pending: live,
            dead: held.saturating_sub(live),
            config: parse_settings(&r.settings)?,
        })
    }
}

impl RedisEngine {
    /// Reads group `group` of stream `name` as `member`, waiting for
    /// appends made on any instance without polling
    /// ([`Store::join_group`](crate::Store::join_group)). The member
    /// listens before anything is read, so it misses no entry. Takes one
    /// of this handle's listeners (`listeners_max`).
    pub async fn join_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        member: &str,
    ) -> Result<RedisMember> {
        self.admit(Mode::Existing)?;
        self.config().check_own_name(name)?;
        self.check_name(group)?;
        self.check_name(member)?;
        self.start_listener().await?;
        let wakes = self
            .inner
            .wakes
            .listen_coalescing(tenant, wake_channel(name))?;
        self.group_info(tenant, name, group).await?;
        Ok(RedisMember {
            engine: self.clone(),
            tenant,
            stream: Arc::from(name),
            group: Arc::from(group),
            member: Arc::from(member),
            wakes,
        })
    }
}

/// A member of a consumer group on the Redis engine, from
/// [`RedisEngine::join_group`]: new entries as any instance appends them,
/// and the member's acknowledgements and idle claims.
#[derive(Debug)]
pub struct RedisMember {
    engine: RedisEngine,
    tenant: TenantId,
    stream: Arc<str>,
    group: Arc<str>,
    member: Arc<str>,
    wakes: Listener,
}

impl RedisMember {
    /// Up to `max` new entries, without waiting (possibly none).
    pub async fn try_next(&self, max: usize) -> Result<GroupRead> {
        self.engine
            .read_group(self.tenant, &self.stream, &self.group, &self.member, max)
            .await
    }

    /// Waits until the group has at least one new entry and delivers up
    /// to `max` to this member (or returns the trimmed offsets it passed
    /// over). `CapacityExceeded` (`StreamGroupPending`) at once while the
    /// pending list is full; `ServiceUnavailable` once the handle has
    /// stopped or is gone. Cancel-safe: entries are delivered only when
    /// the call's reply is returned.
    pub async fn next(&self, max: usize) -> Result<GroupRead> {
        loop {
            // A wake taken before this read is never lost: an append
            // after the read leaves one, and the wait returns at once.
            let read = self.try_next(max).await?;
            if !read.entries.is_empty() || read.skipped > 0 {
                return Ok(read);
            }
            self.wakes.recv().await.map_err(|_| Error::STOPPED)?;
        }
    }

    /// Acknowledges `offsets` ([`RedisEngine::ack_group`]).
    pub async fn ack(&self, offsets: &[u64]) -> Result<usize> {
        self.engine
            .ack_group(self.tenant, &self.stream, &self.group, offsets)
            .await
    }

    /// Takes over entries idle for at least `min_idle` for this member
    /// ([`RedisEngine::claim_idle`]).
    pub async fn claim_idle(&self, min_idle: Duration, max: usize) -> Result<Claimed> {
        self.engine
            .claim_idle(
                self.tenant,
                &self.stream,
                &self.group,
                &self.member,
                min_idle,
                max,
            )
            .await
    }
}

impl GroupMember for RedisMember {
    async fn next(&mut self, max: usize) -> Result<GroupRead> {
        RedisMember::next(self, max).await
    }

    async fn ack(&self, offsets: &[u64]) -> Result<usize> {
        RedisMember::ack(self, offsets).await
    }

    async fn claim_idle(&self, min_idle: Duration, max: usize) -> Result<Claimed> {
        RedisMember::claim_idle(self, min_idle, max).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip() {
        for start in [GroupStart::Oldest, GroupStart::End, GroupStart::At(42)] {
            let config = GroupConfig::new(start, 7, 3);
            assert_eq!(parse_settings(&settings(&config)), Ok(config));
        }
        assert!(parse_settings("7/x/o").is_err());
    }
}
