//! The store's side of streams (`src/coord/stream.rs`): names, the lifecycle, the
//! clock, and the wake each append sends to the stream's followers.

use crate::base::error::{Error, Result};
use crate::base::ids::TenantId;
use crate::base::name::Name;
use crate::contract::events::RecordId;
use crate::coord::stream::Stream;
use crate::store::kinds::idempotency::{payload_digest, IdemParams, Outcome};
use crate::store::protocol::attach::ChildOf;
use crate::store::protocol::attach::{LeaseChild, Parent};
use crate::store::protocol::retire::Why;
use crate::store::Collection;
use crate::store::Store;

use crate::base::sync::Arc;
use crate::base::time::MonoTime;
use crate::contract::events::Cause;
#[cfg(feature = "native")]
use crate::contract::events::RecvError;
use crate::contract::names::stream_wake_channel as wake_channel;
use crate::contract::stream::{StreamConfig, StreamInfo, StreamRead};
use crate::coord::stream::Created;
use crate::mem::named::TenantName;
use crate::mem::wake::Listener;
#[cfg(feature = "native")]
use std::time::Duration;

impl Store {
    /// Creates the stream `name` with `config`'s retention. Creating it
    /// again with the same settings is a no-op; with other settings,
    /// [`Error::Exists`]. Names as for [`notify`](Self::notify); refused
    /// with `CapacityExceeded` (`TenantStreams`) past
    /// `streams_per_tenant_max` and (`Streams`) past `streams_max`, with
    /// `InvalidArgument` for a zero limit, an `entries_max` above
    /// `stream_entries_max` or a `bytes_max` above `stream_bytes_max`, with
    /// `StreamBytesTotal` / `StreamEntriesTotal` when the stream's whole
    /// capacity (it is reserved at creation) does not fit the store-wide
    /// budget (`stream_bytes_total_max`, `stream_entries_total_max`), and
    /// with `Draining` or
    /// `ServiceUnavailable` while the store drains or once it stopped.
    ///
    /// A stream created [`attached_to`](StreamConfig::attached_to) a lease
    /// takes a slot of the lease's `streams_per_lease_max`
    /// (`CapacityExceeded`, `Parent(Streams)`), is refused like any child
    /// of a lease that is not visible (`NotFound`, `Revoked`, `Expired`,
    /// `Restarted`), answers `NotFound` everywhere once the lease is not
    /// visible, and is removed with the lease (removal event `Streams`,
    /// cause `Cascaded`). A creation of the same name still confirming its
    /// lease answers `InFlight`.
    pub fn create_stream(&self, tenant: TenantId, name: &str, config: StreamConfig) -> Result<()> {
        let _in = self.enter();
        let created = self.create_stream_steps(tenant, name, config);
        self.observed(tenant, created)
    }

    fn create_stream_steps(
        &self,
        tenant: TenantId,
        name: &str,
        config: StreamConfig,
    ) -> Result<()> {
        self.check_own_name(name)?;
        let name: Arc<str> = Arc::from(name);
        let now = self.shared.clock.now();
        self.admit_new(now)?;
        // A stream whose lease is gone but not yet removed holds the name
        // only until then: it goes now, and the name is free.
        let orphan = self
            .shared
            .streams
            .clear_orphan((tenant, &name), &self.alive(tenant));
        if let Some(stream) = orphan {
            self.retire_stream(tenant, Arc::clone(&name), &stream, Cause::Cascaded, true);
        }
        let Some(lease) = config.lease else {
            return self
                .shared
                .streams
                .create(TenantName(tenant, name), config, None)
                .map(drop);
        };
        // A child of a lease: a slot in the lease's index first, then the
        // stream, inserted invisible; then the slot is confirmed under the
        // lease's lock and the stream revealed (the creation protocol's rule
        // 3). A lease removed before the confirmation could not see the
        // stream, so the creation takes it back; one removed after it finds
        // the slot and removes the stream.
        let seq = self.lease_seq(lease)?;
        let parent = Parent::LeaseStream {
            seq,
            name: Name::new(&name),
        };
        parent.reserve(self, tenant, now)?;
        let key = TenantName(tenant, Arc::clone(&name));
        let serial = match self.shared.streams.create(key, config, Some(seq)) {
            Ok(Created::New(serial)) => serial,
            other => {
                parent.release(self, None);
                return other.map(drop);
            }
        };
        if let Err(e) = parent.confirm(self, None) {
            self.shared.streams.withdraw((tenant, &name), serial);
            parent.release(self, None);
            return Err(e);
        }
        if self.shared.streams.reveal((tenant, &name), serial) {
            Ok(())
        } else {
            // Removed with its lease between the confirmation and now.
            Err(self
                .lease_status(tenant, seq, now)
                .err()
                .unwrap_or(Error::NotFound))
        }
    }

    /// Deletes the stream `name` with its entries and consumers (removal
    /// event `Streams`, cause `Released`). Its followers wake and find it
    /// gone.
    pub fn delete_stream(&self, tenant: TenantId, name: &str) -> Result<()> {
        let _in = self.enter();
        self.check_own_name(name)?;
        let stream = self
            .shared
            .streams
            .delete((tenant, name), &self.alive(tenant))?;
        self.retire_stream(tenant, Arc::from(name), &stream, Cause::Released, true);
        Ok(())
    }

    /// Whether tenant `tenant`'s lease `seq` is visible now: the gate of
    /// every use of a stream attached to it.
    pub(in crate::store) fn alive(&self, tenant: TenantId) -> impl Fn(u64) -> bool + '_ {
        move |seq| {
            self.lease_status(tenant, seq, self.shared.clock.now())
                .is_ok()
        }
    }

    /// [`alive`](Self::alive) at `now` (a commit decides at one instant).
    pub(in crate::store) fn alive_at(
        &self,
        tenant: TenantId,
        now: MonoTime,
    ) -> impl Fn(u64) -> bool + '_ {
        move |seq| self.lease_status(tenant, seq, now).is_ok()
    }

    /// Appends `payload` to the stream; returns its offset, one above the
    /// stream's previous one. A full stream refuses (`CapacityExceeded`,
    /// scope `StreamEntries`) or trims its oldest entries, as created.
    /// Wakes the stream's followers once the entry is readable.
    ///
    /// With an idempotency key, a repeat (the same stream and payload,
    /// under the same key, within `idempotency_ttl`) answers the offset
    /// it appended at and appends nothing, so an append that failed with
    /// `may_have_run` is safe to retry; another payload or stream under
    /// the key is [`Error::IdempotencyMismatch`]. The payload is compared
    /// by a digest, not kept.
    pub fn append(
        &self,
        tenant: TenantId,
        name: &str,
        payload: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<u64> {
        let _in = self.enter();
        self.check_own_name(name)?;
        if idempotency_key.is_none() {
            // The hot path reads no clock of its own.
            return self.append_now(tenant, name, payload);
        }
        let now = self.shared.clock.now();
        self.idempotent(
            tenant,
            idempotency_key,
            || IdemParams::Append {
                stream: Arc::from(name),
                digest: payload_digest(&[payload]),
            },
            now,
            || self.append_now(tenant, name, payload),
            |offset| Outcome::Append(*offset),
            |o| match o {
                Outcome::Append(offset) => Some(*offset),
                _ => None,
            },
        )
    }

    fn append_now(&self, tenant: TenantId, name: &str, payload: &[u8]) -> Result<u64> {
        self.refuse_if_stopped()?;
        let appended = self.shared.streams.append(
            (tenant, name),
            payload,
            &*self.shared.clock,
            &self.alive(tenant),
        );
        let (offset, wake) = self.observed(tenant, appended)?;
        self.shared.wakes.notify(&(tenant, wake))?;
        Ok(offset)
    }

    /// Up to `max` entries (at most `page_len_max`) from offset `from` on.
    /// [`Error::Trimmed`] names the first offset held if `from` was trimmed
    /// away; an offset past the end is `InvalidArgument`.
    pub fn read_stream(
        &self,
        tenant: TenantId,
        name: &str,
        from: u64,
        max: usize,
    ) -> Result<StreamRead> {
        self.check_own_name(name)?;
        let max = self.shared.config.page_cap(max);
        self.consistent(|| {
            let now = self.shared.clock.now();
            self.shared
                .streams
                .read((tenant, name), &self.alive(tenant), from, max, now)
        })
    }

    /// Drops every entry below `before`; returns the first offset held.
    pub fn trim_stream(&self, tenant: TenantId, name: &str, before: u64) -> Result<u64> {
        let _in = self.enter();
        self.check_own_name(name)?;
        let now = self.shared.clock.now();
        self.shared
            .streams
            .trim((tenant, name), &self.alive(tenant), before, now, true)
    }

    /// Records that `consumer` has processed everything below `offset`.
    /// Never backwards: a lower offset is `Conflict` with the committed
    /// one as `current_version`. A new consumer past
    /// `consumers_per_stream_max` is refused (`StreamConsumers`).
    pub fn commit(&self, tenant: TenantId, name: &str, consumer: &str, offset: u64) -> Result<()> {
        let _in = self.enter();
        self.check_own_name(name)?;
        let consumer = self.name(consumer)?;
        let committed =
            self.shared
                .streams
                .commit((tenant, name), &self.alive(tenant), consumer, offset);
        self.observed(tenant, committed)
    }

    /// What the stream holds now: its first and next offsets, its entries,
    /// payload bytes and consumers. Entries past the stream's age are
    /// dropped first (as a read skips them), whether or not the sweep has
    /// reached them.
    pub fn stream_info(&self, tenant: TenantId, name: &str) -> Result<StreamInfo> {
        self.check_own_name(name)?;
        self.consistent(|| {
            let now = self.shared.clock.now();
            self.shared
                .streams
                .info((tenant, name), &self.alive(tenant), now)
        })
    }

    /// The offset `consumer` committed, if it ever did.
    pub fn committed(&self, tenant: TenantId, name: &str, consumer: &str) -> Result<Option<u64>> {
        self.check_own_name(name)?;
        self.consistent(|| {
            self.shared
                .streams
                .committed((tenant, name), &self.alive(tenant), consumer)
        })
    }

    /// Follows the stream as `consumer`, from its committed offset (or the
    /// first offset held). The follower listens for appends before it
    /// reads the committed offset, so no entry appended in between is
    /// missed; it does not commit by itself ([`Follower::commit`]).
    pub fn follow(&self, tenant: TenantId, name: &str, consumer: &str) -> Result<Follower> {
        let stream = self.stream_name(name)?;
        let consumer = self.name(consumer)?;
        let listening = self
            .shared
            .wakes
            .listen_coalescing(tenant, wake_channel(&stream));
        let wakes = self.observed(tenant, listening)?;
        let position = self.consistent(|| {
            let now = self.shared.clock.now();
            self.shared
                .streams
                .start((tenant, &stream), &self.alive(tenant), &consumer, now)
        })?;
        Ok(Follower {
            store: self.clone(),
            tenant,
            stream,
            consumer,
            position,
            wakes,
        })
    }

    /// Streams held.
    pub fn streams(&self) -> u64 {
        self.shared.streams.len()
    }

    pub(in crate::store) fn stream_name(&self, name: &str) -> Result<Arc<str>> {
        self.check_own_name(name)?;
        Ok(Arc::from(name))
    }
}

/// A consumer following one stream: reads from its position on and waits
/// for appends, without polling. From [`Store::follow`].
#[derive(Debug)]
pub struct Follower {
    store: Store,
    tenant: TenantId,
    stream: Arc<str>,
    consumer: Arc<str>,
    position: u64,
    wakes: Listener,
}

impl Follower {
    /// The offset the next read starts at.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Up to `max` entries from the position on, without waiting (possibly
    /// none); advances the position past them.
    pub fn try_next(&mut self, max: usize) -> Result<StreamRead> {
        (self.reader(max).1)()
    }

    #[cfg(feature = "native")]
    /// [`next`](Self::next), blocking the calling thread until there is at
    /// least one entry from the position on. Never call it on an async
    /// runtime's worker thread.
    pub fn blocking_next(&mut self, max: usize) -> Result<StreamRead> {
        self.next_within(max, None)
    }

    #[cfg(feature = "native")]
    /// [`blocking_next`](Self::blocking_next) for at most `timeout`; an
    /// empty read if nothing came.
    pub fn blocking_next_timeout(&mut self, max: usize, timeout: Duration) -> Result<StreamRead> {
        self.next_within(max, Some(timeout))
    }

    /// Waits, as a future for any executor, until there is at least one
    /// entry from the position on, and returns up to `max` of them.
    /// `ServiceUnavailable` once the store has stopped or is gone.
    /// Cancel-safe: the position moves only when entries are returned.
    pub async fn next(&mut self, max: usize) -> Result<StreamRead> {
        let (wakes, read) = self.reader(max);
        read_until(wakes, read, has_entries).await
    }

    /// The follower's listener, and its read of up to `max` entries from
    /// the position on, which moves the position past them.
    fn reader(&mut self, max: usize) -> (&Listener, impl FnMut() -> Result<StreamRead> + '_) {
        let Follower {
            store,
            tenant,
            stream,
            position,
            wakes,
            ..
        } = self;
        let read = move || {
            let read = store.read_stream(*tenant, stream, *position, max)?;
            *position = read.next;
            Ok(read)
        };
        (wakes, read)
    }

    #[cfg(feature = "native")]
    fn next_within(&mut self, max: usize, timeout: Option<Duration>) -> Result<StreamRead> {
        if crate::base::faults::active(crate::base::faults::StoreFault::WaitBeforeRead) {
            // Broken twin: an entry appended before the follower attached
            // left no wake, so this waits for one that never comes.
            let _ = self.wakes.blocking_recv();
        }
        let (wakes, read) = self.reader(max);
        blocking_read_until(wakes, timeout, read, has_entries)
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
    pub fn seek_to_first(&mut self) -> Result<u64> {
        let first = self.store.stream_info(self.tenant, &self.stream)?.first;
        self.position = first;
        Ok(first)
    }

    /// Commits the follower's position for its consumer.
    pub fn commit(&self) -> Result<()> {
        self.store
            .commit(self.tenant, &self.stream, &self.consumer, self.position)
    }
}

/// Whether a follower's read has something to return.
fn has_entries(read: &StreamRead) -> bool {
    !read.entries.is_empty()
}

/// Calls `read` until what it returns is `ready`, waiting on `wakes` (a
/// listener attached before the first read) in between: the one wait loop
/// of followers and group members. `ServiceUnavailable` once the store
/// has stopped or is gone.
pub(in crate::store) async fn read_until<T>(
    wakes: &Listener,
    mut read: impl FnMut() -> Result<T>,
    ready: impl Fn(&T) -> bool,
) -> Result<T> {
    loop {
        // Read after taking any pending wake: an append between the read
        // and the wait leaves a wake, so the wait returns at once.
        let got = read()?;
        if ready(&got) {
            return Ok(got);
        }
        wakes.recv().await.map_err(|_| Error::STOPPED)?;
    }
}

#[cfg(feature = "native")]
/// [`read_until`], blocking the calling thread for at most `timeout`
/// (`None`: until `ready`); what `read` returned last if the time ran out.
pub(in crate::store) fn blocking_read_until<T>(
    wakes: &Listener,
    timeout: Option<Duration>,
    mut read: impl FnMut() -> Result<T>,
    ready: impl Fn(&T) -> bool,
) -> Result<T> {
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    loop {
        let got = read()?;
        if ready(&got) {
            return Ok(got);
        }
        let waited = match deadline {
            None => wakes.blocking_recv(),
            Some(d) => match d.checked_duration_since(std::time::Instant::now()) {
                Some(left) => wakes.blocking_recv_timeout(left),
                None => return Ok(got),
            },
        };
        match waited {
            Ok(_) => {}
            Err(RecvError::Timeout) => return Ok(got),
            Err(_) => return Err(Error::STOPPED),
        }
    }
}

impl Store {
    /// Takes one entry of `child` out of lease `seq`'s index of `kind`.
    /// After a stream left the stream hub: its event, its lease's index
    /// (when `detach`: the lease is not itself being removed), and a wake
    /// for its followers, who then find it gone. Streams are not records:
    /// they own no tenant units or holds.
    pub(in crate::store) fn retire_stream(
        &self,
        tenant: TenantId,
        name: Arc<str>,
        stream: &Stream,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        self.inside_gate();
        if let Some(seq) = stream.lease.filter(|_| detach) {
            self.detach_from_lease(seq, LeaseChild::STREAMS, ChildOf::Stream(&name));
        }
        self.announce(
            Collection::Streams,
            tenant,
            || RecordId::Stream(name),
            &why,
            || None,
        );
        // No follower listening is not a failure here.
        let _ = self
            .shared
            .wakes
            .notify(&(tenant, Arc::clone(&stream.wake)));
    }
}
