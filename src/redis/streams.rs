//! Streams on Redis (SPEC §10, ADR 0033): append-only logs with offsets,
//! retention chosen at creation, committed consumers, and followers woken
//! by appends on any instance.
//!
//! A stream lives in its tenant's slot: a hash of its settings and
//! counters, two lists in step (payloads, append times) and a hash of
//! consumers (`lua/shared/70_streams.lua` has the layout). Every transition is one
//! function. Offsets come from the stream's own counter, so they never
//! repeat, also across trims and an emptied stream. Entries past the
//! stream's age are never returned (each read compares the server's clock
//! with their append times) and are dropped by the next append, so an
//! aging stream with no appends keeps its last entries' memory until then
//! (always within its `entries_max` and `bytes_max`). The store-wide
//! budget (`streams_max`, `stream_bytes_total_max`,
//! `stream_entries_total_max`) is one reservation per stream (`room.rs`).
//!
//! An append publishes a wake for the stream's followers from inside its
//! function, so the entry and the wake go together, and wakes this
//! handle's own followers when it returns. A follower listens before it
//! reads its starting offset, so it misses nothing.

use super::reply::Reply;
use super::{quota_arg, scripts, Call, Issued, Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::TenantId;
use crate::base::time::duration_to_millis_ceil;
use crate::contract::engine::Follow;
use crate::contract::names::stream_wake_channel as wake_channel;
use crate::contract::stream::{StreamConfig, StreamEntry, StreamInfo, StreamRead, WhenFull};
use crate::mem::wake::Listener;
use std::sync::Arc;

impl RedisEngine {
    /// Creates the stream `name` with `config`'s retention; the same
    /// stream again is a no-op, the name with other settings
    /// [`Error::Exists`] ([`Store::create_stream`](crate::Store::create_stream)
    /// has every rule). Its capacity is reserved under the store-wide
    /// stream budget at creation.
    pub async fn create_stream(
        &self,
        tenant: TenantId,
        name: &str,
        config: StreamConfig,
    ) -> Result<()> {
        self.config().check_own_name(name)?;
        self.inner.stream_limits.check(&config)?;
        let store = self.config();
        let args = scripts::CreateStreamArgs {
            name: name.into(),
            entries_max: config.entries_max.into(),
            bytes_max: config.bytes_max.into(),
            age_max: config
                .age_max
                .map_or_else(String::new, |a| duration_to_millis_ceil(a).to_string())
                .into(),
            when_full: match config.when_full {
                WhenFull::Refuse => "r",
                WhenFull::TrimOldest => "t",
            }
            .into(),
            lease: config
                .lease
                .map_or_else(String::new, |l| l.seq().to_string())
                .into(),
            quota: quota_arg(store.streams_per_tenant_max).into(),
            per_lease_max: store.streams_per_lease_max.into(),
        }
        .encode();
        let issued = config
            .lease
            .map_or(Issued::Nothing, |l| Issued::Id(l.incarnation(), l.seq()));
        self.answer(scripts::CREATE_STREAM, tenant, Mode::Creating, issued, args)
            .await
            .map(drop)
    }

    /// Deletes the stream with its entries and consumers (removal event
    /// `Streams`, cause `Released`); its followers on every instance wake
    /// and find it gone.
    pub async fn delete_stream(&self, tenant: TenantId, name: &str) -> Result<()> {
        let args = scripts::DeleteStreamArgs { name: name.into() }.encode();
        self.stream_call(scripts::DELETE_STREAM, tenant, name, args)
            .await
            .map(drop)
    }

    /// Appends `payload`; returns its offset, one above the stream's
    /// previous one. A full stream refuses (`CapacityExceeded`, scope
    /// `StreamEntries`) or trims its oldest entries, as created. Its
    /// followers on every instance wake.
    pub async fn append(
        &self,
        tenant: TenantId,
        name: &str,
        payload: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<u64> {
        let call = self.append_call(tenant, name, payload, idempotency_key)?;
        let reply = self.answer_call(tenant, call).await?;
        self.appended(tenant, name);
        Ok(scripts::AppendReply::decode(&reply)?.offset)
    }

    /// What follows an append on this handle: its followers here wake
    /// (the function woke the other instances').
    pub(super) fn appended(&self, tenant: TenantId, name: &str) {
        // Refused only once this handle has stopped; the entry is in.
        let _ = self.inner.wakes.notify(&(tenant, wake_channel(name)));
    }

    /// [`append`](Self::append)'s call.
    pub(super) fn append_call(
        &self,
        tenant: TenantId,
        name: &str,
        payload: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<Call> {
        self.inner.stream_limits.check_payload(payload.len())?;
        if let Some(k) = idempotency_key {
            self.check_name(k)?;
        }
        self.config().check_own_name(name)?;
        let channel = wake_channel(name);
        let quota = self.quota(tenant);
        let args = scripts::AppendArgs {
            name: name.into(),
            payload: payload.into(),
            wake: channel.as_bytes().into(),
            ikey: idempotency_key.unwrap_or("").into(),
            ikey_ttl: self.idempotency_ttl_ms().into(),
            quota: quota_arg(quota.idempotency_max).into(),
        }
        .encode();
        // A key's record is a new record, under the idempotency ceiling;
        // a draining handle still appends, and remembers the key.
        let mode = if idempotency_key.is_some() {
            Mode::Upserting
        } else {
            Mode::Existing
        };
        Ok(Call {
            function: scripts::APPEND,
            mode,
            issued: Issued::Nothing,
            args,
        })
    }

    /// Up to `max` entries (at most `page_len_max`) from offset `from` on.
    /// [`Error::Trimmed`] names the first offset held if `from` was trimmed
    /// away (or is past the stream's age); an offset past the end is
    /// `InvalidArgument`.
    pub async fn read_stream(
        &self,
        tenant: TenantId,
        name: &str,
        from: u64,
        max: usize,
    ) -> Result<StreamRead> {
        let max = self.config().page_cap(max);
        let args = scripts::ReadStreamArgs {
            name: name.into(),
            from: from.into(),
            most: max.into(),
        }
        .encode();
        let reply = self
            .stream_call(scripts::READ_STREAM, tenant, name, args)
            .await?;
        let entries: Vec<StreamEntry> = scripts::ReadStreamReply::decode(&reply)?
            .each
            .into_iter()
            .zip(from..)
            .map(|(entry, offset)| StreamEntry {
                offset,
                payload: entry.payload,
            })
            .collect();
        let next = from + entries.len() as u64;
        Ok(StreamRead { entries, next })
    }

    /// Drops every entry below `before`; returns the first offset held.
    pub async fn trim_stream(&self, tenant: TenantId, name: &str, before: u64) -> Result<u64> {
        let call = self.trim_stream_call(name, before)?;
        let reply = self.answer_call(tenant, call).await?;
        Ok(scripts::TrimStreamReply::decode(&reply)?.first)
    }

    /// [`trim_stream`](Self::trim_stream)'s call.
    pub(super) fn trim_stream_call(&self, name: &str, before: u64) -> Result<Call> {
        let args = scripts::TrimStreamArgs {
            name: name.into(),
            before: before.into(),
        }
        .encode();
        self.stream_of(scripts::TRIM_STREAM, name, args)
    }

    /// Records that `consumer` has processed everything below `offset`;
    /// never backwards (`Conflict` with the committed offset). A new
    /// consumer past `consumers_per_stream_max` is refused
    /// (`StreamConsumers`).
    pub async fn commit(
        &self,
        tenant: TenantId,
        name: &str,
        consumer: &str,
        offset: u64,
    ) -> Result<()> {
        let call = self.commit_call(name, consumer, offset)?;
        self.answer_call(tenant, call).await.map(drop)
    }

    /// [`commit`](Self::commit)'s call.
    pub(super) fn commit_call(&self, name: &str, consumer: &str, offset: u64) -> Result<Call> {
        self.check_name(consumer)?;
        let args = scripts::CommitArgs {
            name: name.into(),
            consumer: consumer.into(),
            offset: offset.into(),
            consumers_max: self.inner.stream_limits.consumers_max.into(),
        }
        .encode();
        self.stream_of(scripts::COMMIT, name, args)
    }

    /// What the stream holds: first and next offsets, entries, payload
    /// bytes, consumers. Entries past the stream's age that no append has
    /// dropped yet are counted, though no read returns them.
    pub async fn stream_info(&self, tenant: TenantId, name: &str) -> Result<StreamInfo> {
        let r = self.info_of(tenant, name, "").await?;
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok(StreamInfo {
            first: r.first,
            next: r.next,
            entries: count(r.entries),
            bytes: count(r.bytes),
            consumers: count(r.consumers),
            groups: count(r.groups),
        })
    }

    /// The offset `consumer` committed, if it ever did.
    pub async fn committed(
        &self,
        tenant: TenantId,
        name: &str,
        consumer: &str,
    ) -> Result<Option<u64>> {
        self.check_name(consumer)?;
        let r = self.info_of(tenant, name, consumer).await?;
        Ok(u64::try_from(r.committed).ok())
    }

    /// Follows the stream as `consumer`, from its committed offset (or the
    /// first offset held). The follower listens for appends on every
    /// instance before it reads that offset, so nothing appended in
    /// between is missed; it does not commit by itself. Takes one of this
    /// handle's listeners (`listeners_max`).
    pub async fn follow(
        &self,
        tenant: TenantId,
        name: &str,
        consumer: &str,
    ) -> Result<RedisFollower> {
        self.admit(Mode::Existing)?;
        self.config().check_own_name(name)?;
        self.check_name(consumer)?;
        self.start_listener().await?;
        let wakes = self
            .inner
            .wakes
            .listen_coalescing(tenant, wake_channel(name))?;
        let r = self.info_of(tenant, name, consumer).await?;
        let position = u64::try_from(r.committed).unwrap_or(r.first);
        Ok(RedisFollower {
            engine: self.clone(),
            tenant,
            stream: Arc::from(name),
            consumer: Arc::from(consumer),
            position,
            wakes,
        })
    }

    /// `stream_info.lua` for `consumer` (`""`: none).
    async fn info_of(
        &self,
        tenant: TenantId,
        name: &str,
        consumer: &str,
    ) -> Result<scripts::StreamInfoReply> {
        let args = scripts::StreamInfoArgs {
            name: name.into(),
            consumer: consumer.into(),
        }
        .encode();
        let reply = self
            .stream_call(scripts::STREAM_INFO, tenant, name, args)
            .await?;
        scripts::StreamInfoReply::decode(&reply)
    }

    /// One call of a function on an existing stream: the name checked and
    /// passed first, then `args`; `NotFound` when the tenant has nothing.
    pub(super) async fn stream_call(
        &self,
        function: scripts::Function,
        tenant: TenantId,
        name: &str,
        args: Vec<Vec<u8>>,
    ) -> Result<Reply> {
        let call = self.stream_of(function, name, args)?;
        self.answer_call(tenant, call).await
    }

    /// A call of `function` on the stream `name` (checked here) with
    /// `args`, the stream's name first.
    fn stream_of(
        &self,
        function: scripts::Function,
        name: &str,
        args: Vec<Vec<u8>>,
    ) -> Result<Call> {
        self.config().check_own_name(name)?;
        Ok(Call {
            function,
            mode: Mode::Existing,
            issued: Issued::Nothing,
            args,
        })
    }
}

/// A consumer following one stream on the Redis engine, from
/// [`RedisEngine::follow`]: reads from its position on and waits for
/// appends made on any instance, without polling.
#[derive(Debug)]
pub struct RedisFollower {
    engine: RedisEngine,
    tenant: TenantId,
    stream: Arc<str>,
    consumer: Arc<str>,
    position: u64,
    wakes: Listener,
}

impl RedisFollower {
    /// The offset the next read starts at.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Up to `max` entries from the position on, without waiting
    /// (possibly none); advances the position past them.
    pub async fn try_next(&mut self, max: usize) -> Result<StreamRead> {
        let read = self
            .engine
            .read_stream(self.tenant, &self.stream, self.position, max)
            .await?;
        self.position = read.next;
        Ok(read)
    }

    /// Waits until there is at least one entry from the position on and
    /// returns up to `max` of them. Cancel-safe: the position moves only
    /// when entries are returned. `ServiceUnavailable` once the handle has
    /// stopped or is gone; `NotFound` once the stream is.
    pub async fn next(&mut self, max: usize) -> Result<StreamRead> {
        loop {
            // A wake taken before this read is never lost: an append
            // after the read leaves one, and the wait returns at once.
            let read = self.try_next(max).await?;
            if !read.entries.is_empty() {
                return Ok(read);
            }
            self.wakes.recv().await.map_err(|_| Error::STOPPED)?;
        }
    }

    /// Moves the position to `offset`: the next read starts there (below
    /// the stream's first offset it answers [`Error::Trimmed`], as any
    /// read). Nothing is committed.
    pub fn seek(&mut self, offset: u64) {
        self.position = offset;
    }

    /// Moves the position to the lowest offset the stream still holds (a
    /// follower whose position was trimmed away goes on from there) and
    /// returns it. `NotFound` if the stream is gone.
    pub async fn seek_to_first(&mut self) -> Result<u64> {
        let first = self
            .engine
            .stream_info(self.tenant, &self.stream)
            .await?
            .first;
        self.position = first;
        Ok(first)
    }

    /// Commits the follower's position for its consumer.
    pub async fn commit(&self) -> Result<()> {
        self.engine
            .commit(self.tenant, &self.stream, &self.consumer, self.position)
            .await
    }
}

impl Follow for RedisFollower {
    fn position(&self) -> u64 {
        RedisFollower::position(self)
    }

    async fn next(&mut self, max: usize) -> Result<StreamRead> {
        RedisFollower::next(self, max).await
    }

    fn seek(&mut self, offset: u64) {
        RedisFollower::seek(self, offset);
    }

    async fn seek_to_first(&mut self) -> Result<u64> {
        RedisFollower::seek_to_first(self).await
    }

    async fn commit(&self) -> Result<()> {
        RedisFollower::commit(self).await
    }
}
