//! The in-memory stream hub: each stream's log under its own mutex, age
//! retention driven by a timing wheel of the hub's own, and the named
//! consumers' committed offsets. What a stream promises is the contract's
//! (`contract/stream.rs`).

use crate::base::error::{ConflictReason, Error, Result, Scope};
use crate::base::ids::TenantId;
use crate::base::sync::{lock_at, Arc, AtomicBool, AtomicU64, Mutex, Ordering, Ranked, Rung};
use crate::base::time::{duration_to_millis_ceil, Clock, MonoTime};
use crate::base::words::LimitSnapshot;
use crate::contract::config::Limits;
use crate::contract::events::Collection;
use crate::contract::group::{Claimed, GroupConfig, GroupInfo, GroupRead, PendingEntry};
use crate::contract::names::stream_wake_channel as wake_channel;
use crate::contract::rules::StreamLimits;
use crate::contract::stream::{
    StreamConfig, StreamEntry, StreamInfo, StreamRead, WhenFull, PAST_THE_END,
    PAYLOAD_OVER_BYTES_MAX,
};
use crate::coord::group::Group;
use crate::mem::named::{view, NameRef, TenantCounts, TenantName};
use crate::mem::quota::Counter;
use crate::mem::shard::{ShardMap, Upsert};
use crate::mem::wheel::{Fired, TimerHandle, Wheel};
use std::collections::{BTreeMap, VecDeque};

/// Whether the lease with this sequence number is visible, asked (with no
/// lock held) before a stream attached to it is used.
pub(crate) type Alive<'a> = &'a dyn Fn(u64) -> bool;

/// What a creation did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Created {
    /// Inserted a new stream (with its serial; invisible if attached to a
    /// lease, until revealed).
    New(u64),
    /// Found the same stream there already (a retried create).
    Existing,
}

/// An age timer's item: the stream and its serial, so a timer set for a
/// deleted stream never acts on a new stream of the same name.
type AgeItem = (TenantName, u64);

pub(crate) struct StreamHub {
    streams: ShardMap<TenantName, Arc<Stream>>,
    tenant_streams: TenantCounts,
    limits: StreamLimits,
    /// The caps that change at run time: the per-tenant and store-wide
    /// counts and budgets, read whole by each creation.
    live: Arc<LimitSnapshot<Limits>>,
    /// Streams held, against `streams_max`.
    count: Counter,
    /// The streams' `bytes_max` together, against `stream_bytes_total_max`.
    budget_bytes: Counter,
    /// The streams' `entries_max` together, against
    /// `stream_entries_total_max`.
    budget_entries: Counter,
    /// When the oldest entry of each aging stream comes of age. At most
    /// one timer per stream (its log's `armed`), so at most `streams_max`
    /// live timers.
    aging: Mutex<Wheel<AgeItem>>,
    serials: AtomicU64,
}

pub(crate) struct Stream {
    config: StreamConfig,
    /// Tells this stream from an earlier one of the same name.
    serial: u64,
    /// Its key (for its age timer).
    key: TenantName,
    /// The stream's own wake channel (reserved name), notified per append.
    pub(crate) wake: Arc<str>,
    /// The sequence number of the lease it is attached to.
    pub(crate) lease: Option<u64>,
    /// False while the creation of an attached stream is confirming its
    /// lease; such a stream answers `NotFound` to everything.
    visible: AtomicBool,
    /// The handle of its age timer, if one was set (bits; for deletion).
    timer: AtomicU64,
    log: Mutex<Log>,
}

struct Log {
    entries: VecDeque<(StreamEntry, MonoTime)>,
    /// The offset the next append gets. Offsets a transaction took at
    /// staging lie below it; one rolled back leaves a gap (no entry).
    next: u64,
    /// One past the highest offset an entry was appended at: a
    /// transaction's staged entries go in only above it.
    appended: u64,
    /// The lowest offset still readable (everything below was trimmed).
    first: u64,
    bytes: usize,
    consumers: BTreeMap<Arc<str>, u64>,
    /// Its consumer groups (with the consumers, at most
    /// `consumers_per_stream_max`).
    groups: BTreeMap<Arc<str>, Group>,
    /// Whether the stream has an age timer set, or is about to have one
    /// set by the thread that raised this flag.
    armed: bool,
}

impl Log {
    /// Named consumers and groups: what `consumers_per_stream_max` counts.
    fn readers(&self) -> usize {
        self.consumers.len() + self.groups.len()
    }

    /// Refuses committing `offset` for a consumer whose committed offset
    /// is `committed` (`None`: a new one, while the stream has `consumers`)
    /// if the offset lies past the end, behind the committed one, or over
    /// `consumers_max` for a new consumer. The one rule of consumer
    /// commits.
    fn check_commit(
        &self,
        consumers_max: usize,
        committed: Option<u64>,
        consumers: usize,
        offset: u64,
    ) -> Result<()> {
        if offset > self.next {
            return Err(Error::InvalidArgument {
                reason: PAST_THE_END,
            });
        }
        match committed {
            Some(committed) if offset < committed => {
                Err(Error::conflict(ConflictReason::CommitBehind, committed))
            }
            None if consumers >= consumers_max => Err(Error::capacity(
                Scope::StreamConsumers,
                consumers_max as u64,
                consumers as u64,
            )),
            _ => Ok(()),
        }
    }

    /// Refuses `entries` more entries of `bytes` payload bytes in all if
    /// they do not fit and the stream refuses when full (one that trims
    /// makes room as it appends). The one room rule of appends.
    fn refuse_if_full(&self, config: &StreamConfig, entries: usize, bytes: usize) -> Result<()> {
        if config.when_full == WhenFull::TrimOldest {
            return Ok(());
        }
        if self.entries.len() + entries > config.entries_max {
            return Err(Error::capacity(
                Scope::StreamEntries,
                config.entries_max as u64,
                self.entries.len() as u64,
            ));
        }
        if self.bytes + bytes > config.bytes_max {
            // Full by bytes: the limit and use are in payload bytes.
            return Err(Error::capacity(
                Scope::StreamEntries,
                config.bytes_max as u64,
                self.bytes as u64,
            ));
        }
        Ok(())
    }

    /// Appends an entry at `offset` (admitted by `refuse_if_full`),
    /// trimming the oldest entries first if the stream trims when full.
    fn push(&mut self, config: &StreamConfig, offset: u64, payload: Arc<[u8]>, now: MonoTime) {
        while !self.entries.is_empty()
            && (self.entries.len() >= config.entries_max
                || self.bytes + payload.len() > config.bytes_max)
        {
            self.pop_front();
        }
        self.bytes += payload.len();
        self.appended = offset + 1;
        self.entries
            .push_back((StreamEntry { offset, payload }, now));
    }

    fn pop_front(&mut self) {
        if let Some((entry, _)) = self.entries.pop_front() {
            self.bytes -= entry.payload.len();
            self.first = entry.offset + 1;
        }
    }

    /// Trims entries older than the stream's age limit; returns how many.
    fn trim_aged(&mut self, config: &StreamConfig, now: MonoTime) -> usize {
        let Some(age) = config.age_max else { return 0 };
        let before = self.entries.len();
        while self
            .entries
            .front()
            .is_some_and(|(_, at)| now.saturating_since(*at) >= age)
        {
            self.pop_front();
        }
        before - self.entries.len()
    }

    /// The tick the oldest entry comes of age at, if the stream ages.
    fn due(&self, config: &StreamConfig) -> Option<u64> {
        let age = config.age_max?;
        let (_, at) = self.entries.front()?;
        Some(at.as_millis().saturating_add(duration_to_millis_ceil(age)))
    }

    /// Raises `armed` if the stream ages, holds an entry and has no timer:
    /// the due tick of the timer the caller must then set.
    fn arm(&mut self, config: &StreamConfig) -> Option<u64> {
        if self.armed {
            return None;
        }
        let due = self.due(config)?;
        self.armed = true;
        Some(due)
    }
}

impl Stream {
    /// False while the creation of an attached stream is in flight.
    pub(crate) fn visible(&self) -> bool {
        self.visible.load(Ordering::Acquire)
    }

    /// The stream's log as of `now`, locked: entries past the stream's
    /// age are dropped first. Every call that reads, reports or changes
    /// the entries takes it so, so none counts or returns an entry past
    /// its age, whether or not the sweep or another call dropped it yet.
    fn log_at(&self, now: MonoTime) -> Ranked<'_, Log> {
        let mut log = lock_at(Rung::Stream, &self.log);
        log.trim_aged(&self.config, now);
        log
    }
}

impl StreamHub {
    pub(crate) fn new(
        limits: StreamLimits,
        live: Arc<LimitSnapshot<Limits>>,
        start: MonoTime,
    ) -> Self {
        let (count, bytes, entries) = live.read(|l| {
            let c = l.ceiling(Collection::Streams);
            (c, l.stream_bytes_total_max, l.stream_entries_total_max)
        });
        StreamHub {
            streams: ShardMap::with_capacity(16),
            tenant_streams: TenantCounts::new(Scope::Tenant(Collection::Streams)),
            count: Counter::new(Scope::Collection(Collection::Streams), count),
            budget_bytes: Counter::new(Scope::StreamBytesTotal, bytes),
            budget_entries: Counter::new(Scope::StreamEntriesTotal, entries),
            limits,
            live,
            aging: Mutex::new(Wheel::new(start.as_millis())),
            serials: AtomicU64::new(0),
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.count.used()
    }

    /// The visible stream under `key` whose lease, if any, is `alive`.
    fn get(&self, key: NameRef, alive: Alive) -> Result<Arc<Stream>> {
        let stream = self
            .streams
            .read(view(&key), |s| s.visible().then(|| Arc::clone(s)))
            .flatten()
            .ok_or(Error::NotFound)?;
        match stream.lease {
            Some(seq) if !alive(seq) => Err(Error::NotFound),
            _ => Ok(stream),
        }
    }

    /// Creates the stream; `lease` is the sequence number of the lease in
    /// `config.lease` (then the stream is inserted invisible, for the
    /// caller to confirm the lease and [`reveal`](Self::reveal) it).
    pub(crate) fn create(
        &self,
        key: TenantName,
        config: StreamConfig,
        lease: Option<u64>,
    ) -> Result<Created> {
        self.limits.check(&config)?;
        // A retried creation finds its stream and takes no room, however
        // full the store is.
        let held = self
            .streams
            .read(&key, |s| s.visible().then(|| s.config == config))
            .flatten();
        match held {
            Some(true) => return Ok(Created::Existing),
            Some(false) => return Err(Error::Exists),
            None => {}
        }
        let caps = self.live.read(|l| {
            let c = l.ceiling(Collection::Streams);
            let budgets = (l.stream_bytes_total_max, l.stream_entries_total_max);
            (l.streams_per_tenant_max, c, budgets)
        });
        let (per_tenant, ceiling, (bytes_total, entries_total)) = caps;
        // A stream reserves its whole capacity from the store's budget, so
        // no append can need memory the store did not commit to.
        let store_wide = self.tenant_streams.admit(
            key.0,
            per_tenant,
            &[
                (&self.count, 1, ceiling),
                (&self.budget_bytes, config.bytes_max as u64, bytes_total),
                (
                    &self.budget_entries,
                    config.entries_max as u64,
                    entries_total,
                ),
            ],
        )?;
        let serial = self.serials.fetch_add(1, Ordering::Relaxed);
        let stream = Arc::new(Stream {
            config: config.clone(),
            serial,
            wake: wake_channel(&key.1),
            key: key.clone(),
            lease,
            visible: AtomicBool::new(lease.is_none()),
            timer: AtomicU64::new(TimerHandle::NONE.to_bits()),
            log: Mutex::new(Log {
                entries: VecDeque::new(),
                next: 0,
                appended: 0,
                first: 0,
                bytes: 0,
                consumers: BTreeMap::new(),
                groups: BTreeMap::new(),
                armed: false,
            }),
        });
        let (created, _) = self.streams.upsert(key.clone(), |existing| match existing {
            None => Upsert::Put(stream, Ok(Created::New(serial))),
            Some(s) if !s.visible() => Upsert::Keep(Err(Error::InFlight)),
            // The same stream again is not an error (a retried create).
            Some(s) if s.config == config => Upsert::Keep(Ok(Created::Existing)),
            Some(_) => Upsert::Keep(Err(Error::Exists)),
        });
        if created == Ok(Created::New(serial)) {
            store_wide.commit();
        } else {
            drop(store_wide);
            self.give_slot(key.0);
        }
        created
    }

    /// Makes the stream created as `serial` visible; false if it is gone
    /// (its lease was removed since the creation confirmed it).
    pub(crate) fn reveal(&self, key: NameRef, serial: u64) -> bool {
        self.streams
            .read(view(&key), |s| {
                let ours = s.serial == serial;
                if ours {
                    s.visible.store(true, Ordering::Release);
                }
                ours
            })
            .unwrap_or(false)
    }

    /// Removes the stream under `key` if `remove` says so; gives its slots
    /// back and cancels its age timer.
    fn remove(&self, key: NameRef, remove: impl FnOnce(&Stream) -> bool) -> Option<Arc<Stream>> {
        let removed = self
            .streams
            .remove_if(view(&key), |s| if remove(s) { Ok(()) } else { Err(()) });
        let Some(Ok(stream)) = removed else {
            return None;
        };
        self.count.release(1);
        self.budget_bytes.release(stream.config.bytes_max as u64);
        self.budget_entries
            .release(stream.config.entries_max as u64);
        self.give_slot(key.0);
        // A timer set after this read fires for a serial no stream has any
        // more, and is dropped then.
        let timer = TimerHandle::from_bits(stream.timer.load(Ordering::Acquire));
        lock_at(Rung::Wheel, &self.aging).cancel(timer);
        Some(stream)
    }

    /// Removes the stream under `key` if it hangs from a lease that is no
    /// longer `alive` (its name is free again, as a record's key is once
    /// its ancestor is gone); returns it, for its event.
    pub(crate) fn clear_orphan(&self, key: NameRef, alive: Alive) -> Option<Arc<Stream>> {
        let seq = self.streams.read(view(&key), |s| s.lease).flatten()?;
        if alive(seq) {
            return None;
        }
        self.remove_child(key, seq).filter(|s| s.visible())
    }

    /// Takes back the stream a creation inserted as `serial` and could not
    /// confirm (never visible).
    pub(crate) fn withdraw(&self, key: NameRef, serial: u64) {
        self.remove(key, |s| s.serial == serial);
    }

    /// Removes the stream under `key` if it hangs from lease `seq` (a
    /// cascade); returns it, for its event and its followers' wake.
    pub(crate) fn remove_child(&self, key: NameRef, seq: u64) -> Option<Arc<Stream>> {
        self.remove(key, |s| s.lease == Some(seq))
    }

    fn give_slot(&self, tenant: TenantId) {
        self.tenant_streams.give(tenant);
    }

    /// Deletes the visible stream under `key` (whose lease, if any, is
    /// `alive`); returns it, for its lease's index, its event and its
    /// followers' wake.
    pub(crate) fn delete(&self, key: NameRef, alive: Alive) -> Result<Arc<Stream>> {
        let stream = self.get(key, alive)?;
        self.remove(key, |s| s.serial == stream.serial)
            .ok_or(Error::NotFound)
    }

    /// Sets the age timer of the stream under `key` at tick `due`.
    fn set_timer(&self, stream: &Stream, due: u64) {
        let item = (stream.key.clone(), stream.serial);
        let handle = lock_at(Rung::Wheel, &self.aging).insert(item, due);
        stream.timer.store(handle.to_bits(), Ordering::Release);
    }

    /// Fires the age timers due at `now`: trims each stream's aged entries
    /// and sets its next timer from its new oldest entry. Returns the
    /// entries trimmed.
    pub(crate) fn sweep(&self, now: MonoTime) -> usize {
        let mut fired: Vec<Fired<AgeItem>> = Vec::new();
        lock_at(Rung::Wheel, &self.aging).advance(now.as_millis(), &mut fired);
        let mut trimmed = 0;
        for Fired {
            item: (key, serial),
            ..
        } in fired
        {
            let Some(stream) = self.streams.read(&key, Arc::clone) else {
                continue;
            };
            if stream.serial != serial {
                continue;
            }
            let next = {
                let mut log = lock_at(Rung::Stream, &stream.log);
                trimmed += log.trim_aged(&stream.config, now);
                log.armed = false;
                log.arm(&stream.config)
            };
            if let Some(due) = next {
                self.set_timer(&stream, due);
            }
        }
        trimmed
    }

    /// Streams tenant `tenant` holds.
    /// Sets the counters' own limits to `l`'s (what they report; every
    /// admission takes its limits from the snapshot).
    pub(crate) fn relimit(&self, l: &Limits) {
        self.count.set_limit(l.ceiling(Collection::Streams));
        self.budget_bytes.set_limit(l.stream_bytes_total_max);
        self.budget_entries.set_limit(l.stream_entries_total_max);
    }

    /// Streams tenant `tenant` holds, and the cap.
    pub(crate) fn tenant_usage(&self, tenant: TenantId) -> (u64, u64) {
        let cap = self.live.read(|l| l.streams_per_tenant_max);
        (self.tenant_streams.of(tenant), cap)
    }

    /// Every stream attached to a lease: its tenant, lease and name.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn attached(&self) -> Vec<(TenantId, u64, Arc<str>)> {
        let mut out = Vec::new();
        self.streams.for_each(|TenantName(tenant, name), s| {
            if let Some(seq) = s.lease {
                out.push((*tenant, seq, Arc::clone(name)));
            }
        });
        out
    }

    /// The first difference between the streams and what is derived from
    /// them: the store-wide and per-tenant counts, each log's bytes and
    /// bounds, and an age timer behind every armed stream.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn audit(&self) -> std::result::Result<(), String> {
        let mut streams = Vec::new();
        self.streams
            .for_each(|key, stream| streams.push((key.clone(), Arc::clone(stream))));
        if streams.len() as u64 != self.count.used() {
            return Err(format!(
                "streams: {} held, {} admitted",
                streams.len(),
                self.count.used()
            ));
        }
        let budget = |f: fn(&StreamConfig) -> usize| {
            streams
                .iter()
                .map(|(_, s)| f(&s.config) as u64)
                .sum::<u64>()
        };
        let reserved = (budget(|c| c.bytes_max), budget(|c| c.entries_max));
        let budgeted = (self.budget_bytes.used(), self.budget_entries.used());
        if reserved != budgeted {
            return Err(format!(
                "streams reserve {reserved:?} (bytes, entries) but the budget counts {budgeted:?}"
            ));
        }
        let mut per_tenant: BTreeMap<TenantId, u64> = BTreeMap::new();
        for (TenantName(tenant, name), stream) in &streams {
            *per_tenant.entry(*tenant).or_default() += 1;
            let log = lock_at(Rung::Stream, &stream.log);
            let bytes: usize = log.entries.iter().map(|(e, _)| e.payload.len()).sum();
            // Offsets rise, from `first` on, below `appended` (the last
            // one just below it); gaps are offsets a transaction took and
            // never wrote.
            let offsets: Vec<u64> = log.entries.iter().map(|(e, _)| e.offset).collect();
            let offsets_rise = offsets.windows(2).all(|w| w[0] < w[1])
                && offsets.first().is_none_or(|&o| o >= log.first)
                && offsets.last().is_none_or(|&o| o + 1 == log.appended);
            if bytes != log.bytes
                || !offsets_rise
                || log.appended > log.next
                || log.first > log.next
                || log.entries.len() > stream.config.entries_max
                || log.bytes > stream.config.bytes_max
            {
                return Err(format!("stream {name}: its log disagrees with its counts"));
            }
            for (group, g) in &log.groups {
                g.audit(log.next)
                    .map_err(|e| format!("stream {name}, group {group}: {e}"))?;
            }
            if !log.armed && log.due(&stream.config).is_some() {
                return Err(format!("stream {name}: aging entries and no age timer"));
            }
            let armed = log.armed;
            drop(log);
            let timer = TimerHandle::from_bits(stream.timer.load(Ordering::Acquire));
            if armed && !lock_at(Rung::Wheel, &self.aging).contains(timer) {
                return Err(format!("stream {name}: armed without an age timer"));
            }
        }
        if self.tenant_streams.snapshot() != per_tenant {
            return Err("streams: the per-tenant counts differ from the streams".into());
        }
        Ok(())
    }

    /// Appends `payload`; returns its offset and the stream's wake channel
    /// (to notify once the lock is given up).
    pub(crate) fn append(
        &self,
        key: NameRef,
        payload: &[u8],
        clock: &dyn Clock,
        alive: Alive,
    ) -> Result<(u64, Arc<str>)> {
        self.limits.check_payload(payload.len())?;
        // Under the map's shared lock: no `Arc` traffic on the stream, unless
        // its lease has to be asked about (with no lock held).
        let appended = self
            .streams
            .read(view(&key), |stream| {
                if !stream.visible() {
                    return Err(Error::NotFound);
                }
                if stream.lease.is_some() {
                    return Ok(Err(Arc::clone(stream)));
                }
                Ok(Ok(Self::append_to(stream, payload, clock)?))
            })
            .ok_or(Error::NotFound)??;
        let (offset, wake, arm) = match appended {
            Ok(done) => done,
            Err(stream) => {
                if stream.lease.is_some_and(|seq| !alive(seq)) {
                    return Err(Error::NotFound);
                }
                Self::append_to(&stream, payload, clock)?
            }
        };
        if let Some(due) = arm {
            // The first entry of a stream without an age timer: set it now
            // that no lock is held.
            let stream = self.streams.read(view(&key), Arc::clone);
            if let Some(stream) = stream {
                self.set_timer(&stream, due);
            }
        }
        Ok((offset, wake))
    }

    /// Appends under the stream's lock; returns the offset, the wake
    /// channel and, if this append raised `armed`, the due tick of the
    /// stream's age timer.
    fn append_to(
        stream: &Stream,
        payload: &[u8],
        clock: &dyn Clock,
    ) -> Result<(u64, Arc<str>, Option<u64>)> {
        let config = &stream.config;
        // Entries are stamped only when the stream has an age limit.
        let now = config.age_max.map_or(MonoTime::ZERO, |_| clock.now());
        if payload.len() > config.bytes_max {
            return Err(Error::InvalidArgument {
                reason: PAYLOAD_OVER_BYTES_MAX,
            });
        }
        let mut log = stream.log_at(now);
        log.refuse_if_full(config, 1, payload.len())?;
        let offset = log.next;
        log.next += 1;
        log.push(config, offset, Arc::from(payload), now);
        let arm = log.arm(config);
        Ok((offset, Arc::clone(&stream.wake), arm))
    }

    /// Takes an offset for a transaction's append of `payload` bytes,
    /// staged now and written at its commit, after checking the payload's
    /// size as an append would. Returns the offset and the stream's serial
    /// (the commit writes only to this stream, not to a later one of the
    /// same name).
    pub(crate) fn reserve(&self, key: NameRef, alive: Alive, payload: usize) -> Result<(u64, u64)> {
        self.limits.check_payload(payload)?;
        let stream = self.get(key, alive)?;
        if payload > stream.config.bytes_max {
            return Err(Error::InvalidArgument {
                reason: PAYLOAD_OVER_BYTES_MAX,
            });
        }
        let mut log = lock_at(Rung::Stream, &stream.log);
        let offset = log.next;
        log.next += 1;
        Ok((offset, stream.serial))
    }

    /// A transaction's appends, at the offsets it reserved (ascending) from
    /// the stream created as `serial`: refused with `NotFound` if the
    /// stream under the name is another one now, with `Conflict` if an
    /// entry went in above the first of them since, or a trim passed it
    /// (offsets only grow), or as a plain append is if they do not fit. With `apply`, writes them;
    /// returns the stream's wake channel.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append_staged(
        &self,
        key: NameRef,
        alive: Alive,
        serial: u64,
        staged: &[(u64, Arc<[u8]>)],
        now: MonoTime,
        apply: bool,
    ) -> Result<Arc<str>> {
        let stream = self.get(key, alive)?;
        if stream.serial != serial {
            return Err(Error::NotFound);
        }
        let config = &stream.config;
        let now = config.age_max.map_or(MonoTime::ZERO, |_| now);
        let arm = {
            let mut log = stream.log_at(now);
            if let Some(&(first, _)) = staged.first() {
                // An entry went in above it, or a trim moved the stream's
                // first offset past it: either way it can no longer be
                // the stream's next entry.
                if log.appended > first || log.first > first {
                    return Err(Error::conflict(
                        ConflictReason::StreamMoved,
                        log.appended.max(log.first),
                    ));
                }
            }
            let bytes = staged.iter().map(|(_, p)| p.len()).sum();
            log.refuse_if_full(config, staged.len(), bytes)?;
            if !apply {
                return Ok(Arc::clone(&stream.wake));
            }
            for (offset, payload) in staged {
                log.push(config, *offset, Arc::clone(payload), now);
            }
            log.arm(config)
        };
        if let Some(due) = arm {
            self.set_timer(&stream, due);
        }
        Ok(Arc::clone(&stream.wake))
    }

    pub(crate) fn read(
        &self,
        key: NameRef,
        alive: Alive,
        from: u64,
        max: usize,
        now: MonoTime,
    ) -> Result<StreamRead> {
        let stream = self.get(key, alive)?;
        let log = stream.log_at(now);
        if from < log.first {
            return Err(Error::Trimmed { first: log.first });
        }
        if from > log.next {
            return Err(Error::InvalidArgument {
                reason: PAST_THE_END,
            });
        }
        // Offsets are dense but for a rolled-back transaction's gaps.
        let skip = log.entries.partition_point(|(e, _)| e.offset < from);
        let entries: Vec<StreamEntry> = log
            .entries
            .iter()
            .skip(skip)
            .take(max)
            .map(|(e, _)| e.clone())
            .collect();
        let next = entries.last().map_or(from, |e| e.offset + 1);
        Ok(StreamRead { entries, next })
    }

    /// Drops every entry below `before` (with `apply`; without, only
    /// checks that it could); returns the first offset held at `now`.
    pub(crate) fn trim(
        &self,
        key: NameRef,
        alive: Alive,
        before: u64,
        now: MonoTime,
        apply: bool,
    ) -> Result<u64> {
        let stream = self.get(key, alive)?;
        let mut log = stream.log_at(now);
        if before > log.next {
            return Err(Error::InvalidArgument {
                reason: PAST_THE_END,
            });
        }
        if !apply {
            return Ok(log.first.max(before));
        }
        while log.entries.front().is_some_and(|(e, _)| e.offset < before) {
            log.pop_front();
        }
        log.first = log.first.max(before);
        Ok(log.first)
    }

    /// Records `consumer`'s committed offset.
    pub(crate) fn commit(
        &self,
        key: NameRef,
        alive: Alive,
        consumer: Arc<str>,
        offset: u64,
    ) -> Result<()> {
        let stream = self.get(key, alive)?;
        let mut log = lock_at(Rung::Stream, &stream.log);
        let committed = log.consumers.get(&consumer).copied();
        let consumers = log.readers();
        log.check_commit(self.limits.consumers_max, committed, consumers, offset)?;
        log.consumers.insert(consumer, offset);
        Ok(())
    }

    /// Whether `offsets` (consumer, offset, in staging order; a consumer
    /// may come more than once), committed one after another as
    /// [`commit`](Self::commit) would, all go in: a transaction's check
    /// before its commit writes anything.
    pub(crate) fn check_commits(
        &self,
        key: NameRef,
        alive: Alive,
        offsets: &[(Arc<str>, u64)],
    ) -> Result<()> {
        let stream = self.get(key, alive)?;
        let log = lock_at(Rung::Stream, &stream.log);
        // What the commits before each one left: the consumers they
        // committed (latest last) and how many of those are new.
        let mut staged: Vec<(&str, u64)> = Vec::new();
        let mut added = 0;
        for (consumer, offset) in offsets {
            let consumer = &**consumer;
            let committed = staged
                .iter()
                .rev()
                .find(|(c, _)| *c == consumer)
                .map(|&(_, o)| o)
                .or_else(|| log.consumers.get(consumer).copied());
            let consumers = log.readers() + added;
            log.check_commit(self.limits.consumers_max, committed, consumers, *offset)?;
            added += usize::from(committed.is_none());
            staged.push((consumer, *offset));
        }
        Ok(())
    }

    /// What the stream holds, without trimming (aged entries the sweep has
    /// not reached yet are counted).
    pub(crate) fn info(&self, key: NameRef, alive: Alive, now: MonoTime) -> Result<StreamInfo> {
        let stream = self.get(key, alive)?;
        let log = stream.log_at(now);
        Ok(StreamInfo {
            first: log.first,
            next: log.next,
            entries: log.entries.len(),
            bytes: log.bytes,
            consumers: log.consumers.len(),
            groups: log.groups.len(),
        })
    }

    pub(crate) fn committed(
        &self,
        key: NameRef,
        alive: Alive,
        consumer: &str,
    ) -> Result<Option<u64>> {
        let stream = self.get(key, alive)?;
        let log = lock_at(Rung::Stream, &stream.log);
        Ok(log.consumers.get(consumer).copied())
    }

    /// Where a follower of `consumer` starts at `now`: its committed
    /// offset, or the first offset still held if it never committed. (A
    /// committed offset since trimmed away makes the follower's first read
    /// `Trimmed`.)
    pub(crate) fn start(
        &self,
        key: NameRef,
        alive: Alive,
        consumer: &str,
        now: MonoTime,
    ) -> Result<u64> {
        let stream = self.get(key, alive)?;
        let log = stream.log_at(now);
        Ok(log.consumers.get(consumer).copied().unwrap_or(log.first))
    }

    /// Creates consumer group `group` on the stream; the same group again
    /// is a no-op (a retried create), the name with other settings
    /// `Exists`.
    pub(crate) fn create_group(
        &self,
        key: NameRef,
        alive: Alive,
        group: Arc<str>,
        config: GroupConfig,
        now: MonoTime,
    ) -> Result<()> {
        self.limits.check_group(&config)?;
        let stream = self.get(key, alive)?;
        let mut log = stream.log_at(now);
        if let Some(g) = log.groups.get(&group) {
            return if g.config == config {
                Ok(())
            } else {
                Err(Error::Exists)
            };
        }
        let readers = log.readers();
        if readers >= self.limits.consumers_max {
            return Err(Error::capacity(
                Scope::StreamConsumers,
                self.limits.consumers_max as u64,
                readers as u64,
            ));
        }
        let g = Group::new(config, log.first, log.next)?;
        log.groups.insert(group, g);
        Ok(())
    }

    /// Deletes consumer group `group` with its pending list.
    pub(crate) fn delete_group(&self, key: NameRef, alive: Alive, group: &str) -> Result<()> {
        let stream = self.get(key, alive)?;
        let mut log = lock_at(Rung::Stream, &stream.log);
        log.groups.remove(group).map(drop).ok_or(Error::NotFound)
    }

    /// Runs `f` on group `group` of the stream with its entries and first
    /// offset as of `now`.
    fn with_group<T>(
        &self,
        key: NameRef,
        alive: Alive,
        group: &str,
        now: MonoTime,
        f: impl FnOnce(&mut Group, &super::group::Entries, u64) -> T,
    ) -> Result<T> {
        let stream = self.get(key, alive)?;
        let mut log = stream.log_at(now);
        let log = &mut *log;
        let g = log.groups.get_mut(group).ok_or(Error::NotFound)?;
        Ok(f(g, &log.entries, log.first))
    }

    /// Delivers up to `max` new entries of `group` to `member`.
    pub(crate) fn read_group(
        &self,
        key: NameRef,
        alive: Alive,
        (group, member): (&str, &Arc<str>),
        max: usize,
        now: MonoTime,
    ) -> Result<GroupRead> {
        self.with_group(key, alive, group, now, |g, entries, first| {
            g.read(entries, first, member, max, now.as_millis())
        })?
    }

    /// Acknowledges `offsets` in `group`; returns how many were pending.
    pub(crate) fn ack_group(
        &self,
        key: NameRef,
        alive: Alive,
        group: &str,
        offsets: &[u64],
    ) -> Result<usize> {
        let stream = self.get(key, alive)?;
        let mut log = lock_at(Rung::Stream, &stream.log);
        let g = log.groups.get_mut(group).ok_or(Error::NotFound)?;
        Ok(g.ack(offsets))
    }

    /// Takes over up to `max` entries of `group` idle for `min_idle` ms.
    pub(crate) fn claim_idle(
        &self,
        key: NameRef,
        alive: Alive,
        (group, member): (&str, &Arc<str>),
        (min_idle, max): (u64, usize),
        now: MonoTime,
    ) -> Result<Claimed> {
        self.with_group(key, alive, group, now, |g, entries, first| {
            g.claim(entries, first, member, min_idle, max, now.as_millis())
        })
    }

    /// Up to `max` of `group`'s pending entries from offset `from` on.
    pub(crate) fn pending(
        &self,
        key: NameRef,
        alive: Alive,
        group: &str,
        (from, max): (u64, usize),
        now: MonoTime,
    ) -> Result<Vec<PendingEntry>> {
        self.with_group(key, alive, group, now, |g, _, _| {
            g.pending(from, max, now.as_millis())
        })
    }

    /// What `group` holds.
    pub(crate) fn group_info(
        &self,
        key: NameRef,
        alive: Alive,
        group: &str,
        now: MonoTime,
    ) -> Result<GroupInfo> {
        self.with_group(key, alive, group, now, |g, _, _| g.info())
    }
}
