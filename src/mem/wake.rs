//! Wake channels: `notify(tenant, channel)` wakes every listener of that
//! channel attached before the call, once per notify. Each listener has a
//! queue of at most `wake_queue_max` wakes; a notify to a full one drops
//! its oldest wake and the next wake counts it (`Missed::Dropped`), so a
//! slow listener costs bounded memory however often its channel is
//! notified. A notify may carry a payload, shared by every listener it
//! reaches.
//!
//! The store's own channels (a queue's, a stream's) are hints to look
//! again: their listeners coalesce, one pending wake absorbing the next.
//!
//! A channel exists while it has listeners: the first `listen` creates it
//! (counted against the tenant's `channels_per_tenant_max`), the last
//! listener's drop removes it, and a notify to a channel nobody listens to
//! does nothing. Listener counts are bounded per channel and per store.
//!
//! Locks: a channel's listener list lives in a shard of a concurrent map
//! (rung `Shard`); each listener's slot has its own mutex
//! (rung `Listener`), taken under the shard lock by `notify` and
//! `close`, and alone by the receiver. Wakers (executor code) run after
//! every lock is given up.

use crate::base::error::{Error, Result, Scope};
use crate::base::faults::{self, StoreFault};
use crate::base::ids::TenantId;
use crate::base::sync::{lock_at, Arc, AtomicBool, Condvar, Mutex, Ordering, Rung, Sleepers};
use crate::base::words::LimitSnapshot;
use crate::contract::config::Limits;
use crate::contract::events::RecvError;
use crate::contract::wake::{Missed, Payload, Wake};
use crate::mem::named::TenantCounts;
use crate::mem::quota::Counter;
use crate::mem::shard::{ShardMap, Upsert};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
#[cfg(feature = "native")]
use std::time::Duration;

type ChannelKey = (TenantId, Arc<str>);

/// Rounds a `listen` makes when the channel keeps being created or removed
/// under it, before it answers `InFlight` (retry).
const ATTACH_ROUNDS_MAX: usize = 4;

/// Every channel of one store, with its listeners.
pub(crate) struct WakeHub {
    channels: ShardMap<ChannelKey, Vec<Arc<Cell>>>,
    /// Channels per tenant, counted against `channels_per_tenant_max`.
    tenant_channels: TenantCounts,
    listeners: Counter,
    /// The caps that change at run time (listeners store-wide and per
    /// channel, channels per tenant), read whole by each listen.
    live: Arc<LimitSnapshot<Limits>>,
    /// Wakes queued per listener (`wake_queue_max`).
    depth: usize,
    closed: AtomicBool,
}

/// One listener's state: the wakes it has not yet received.
struct Cell {
    tenant: TenantId,
    channel: Arc<str>,
    /// A listener of one of the store's own channels: a pending wake
    /// absorbs the next, and nothing counts as missed.
    coalesce: bool,
    /// Most wakes queued.
    depth: usize,
    slot: Mutex<Slot>,
    ready: Condvar,
}

/// One wake waiting to be received.
struct Queued {
    payload: Payload,
    missed: Missed,
}

#[derive(Default)]
struct Slot {
    /// Wakes not yet received, oldest first; at most the cell's `depth`.
    queue: VecDeque<Queued>,
    /// The store stopped or is gone: nothing more will come.
    closed: bool,
    /// The task of an async receiver waiting now.
    waker: Option<Waker>,
    /// Blocking receivers waiting now (a signal is a system call, so it is
    /// sent only when one is).
    sleepers: Sleepers,
}

impl Cell {
    /// Queues one wake; `false` if a pending one absorbed it (a coalescing
    /// listener). A full queue drops its oldest wake, and the wake after
    /// it (or this one) counts it with what it had missed.
    fn push(&self, slot: &mut Slot, payload: &Payload, missed: Missed) -> bool {
        if self.coalesce && !slot.queue.is_empty() {
            return false;
        }
        let mut missed = missed;
        if slot.queue.len() >= self.depth {
            if let Some(oldest) = slot.queue.pop_front() {
                match slot.queue.front_mut() {
                    Some(next) => next.missed = next.missed.after_dropping(oldest.missed),
                    None => missed = missed.after_dropping(oldest.missed),
                }
            }
        }
        slot.queue.push_back(Queued {
            payload: payload.clone(),
            missed,
        });
        true
    }

    /// Queues a wake for the listener. Called under the channel's shard
    /// lock.
    ///
    /// A blocked receiver is signalled after the slot's lock is given up,
    /// so it does not wake only to wait for that lock. Nothing is missed:
    /// a receiver counts itself a sleeper and starts waiting under the
    /// lock, atomically, so one counted here is waiting (or woke already
    /// and will find the wake queued).
    fn signal(&self, payload: &Payload, missed: Missed, wakers: &mut Vec<Waker>) {
        if faults::active(StoreFault::SleepersReadEarly) {
            // Broken twin: a receiver that counts itself a sleeper between
            // the two holds is never signalled.
            let sleeping = lock_at(Rung::Listener, &self.slot).sleepers.any();
            let mut slot = lock_at(Rung::Listener, &self.slot);
            if self.push(&mut slot, payload, missed) {
                wakers.extend(slot.waker.take());
                drop(slot);
                if sleeping {
                    self.ready.notify_one();
                }
            }
            return;
        }
        let sleeping = {
            let mut slot = lock_at(Rung::Listener, &self.slot);
            if !self.push(&mut slot, payload, missed) {
                return;
            }
            wakers.extend(slot.waker.take());
            slot.sleepers.any()
        };
        if sleeping {
            self.ready.notify_one();
        }
    }

    fn close(&self, wakers: &mut Vec<Waker>) {
        let mut slot = lock_at(Rung::Listener, &self.slot);
        slot.closed = true;
        wakers.extend(slot.waker.take());
        self.ready.notify_all();
    }

    /// Takes the oldest queued wake, else reports whether the listener is
    /// closed.
    fn take(&self, slot: &mut Slot) -> Option<Result<Wake, RecvError>> {
        if let Some(queued) = slot.queue.pop_front() {
            Some(Ok(Wake {
                tenant: self.tenant,
                channel: Arc::clone(&self.channel),
                payload: queued.payload,
                missed: queued.missed,
            }))
        } else if slot.closed {
            Some(Err(RecvError::Closed))
        } else {
            None
        }
    }
}

impl WakeHub {
    /// A hub whose listeners queue at most `depth` wakes each
    /// (`wake_queue_max`, at least 1).
    pub(crate) fn new(live: Arc<LimitSnapshot<Limits>>, depth: usize) -> Self {
        let listeners_max = live.read(|l| l.listeners_max);
        WakeHub {
            channels: ShardMap::with_capacity(64),
            tenant_channels: TenantCounts::new(Scope::TenantChannels),
            listeners: Counter::new(Scope::Listeners, listeners_max),
            live,
            depth: depth.max(1),
            closed: AtomicBool::new(false),
        }
    }

    /// Sets the listener counter's own limit to `l`'s (what it reports;
    /// every listen takes its limits from the snapshot).
    pub(crate) fn relimit(&self, l: &Limits) {
        self.listeners.set_limit(l.listeners_max);
    }

    /// Attaches a listener to `(tenant, channel)`. Every notify that starts
    /// after this returns reaches it, queued.
    pub(crate) fn listen(
        self: &Arc<Self>,
        tenant: TenantId,
        channel: Arc<str>,
    ) -> Result<Listener> {
        self.attach_listener(tenant, channel, false)
    }

    /// Attaches a listener to one of the store's own channels (a queue's,
    /// a stream's), whose wakes are hints to look again: one pending wake
    /// absorbs the next.
    pub(crate) fn listen_coalescing(
        self: &Arc<Self>,
        tenant: TenantId,
        channel: Arc<str>,
    ) -> Result<Listener> {
        self.attach_listener(tenant, channel, true)
    }

    fn attach_listener(
        self: &Arc<Self>,
        tenant: TenantId,
        channel: Arc<str>,
        coalesce: bool,
    ) -> Result<Listener> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::STOPPED);
        }
        let caps = self.live.read(|l| {
            let per_channel = l.listeners_per_channel_max;
            (l.listeners_max, per_channel, l.channels_per_tenant_max)
        });
        let (listeners_max, per_channel, channels_per_tenant) = caps;
        self.listeners.acquire_under(1, listeners_max)?;
        let cell = Arc::new(Cell {
            tenant,
            channel: Arc::clone(&channel),
            coalesce,
            depth: if coalesce { 1 } else { self.depth },
            slot: Mutex::new(Slot::default()),
            ready: Condvar::new(),
        });
        let key: ChannelKey = (tenant, channel);
        match self.attach(&key, &cell, per_channel, channels_per_tenant) {
            Ok(()) => {}
            Err(e) => {
                self.listeners.release(1);
                return Err(e);
            }
        }
        let listener = Listener {
            cell,
            hub: Arc::clone(self),
        };
        // A close that ran before the attach could not see this listener.
        if self.closed.load(Ordering::Acquire) {
            let mut wakers = Vec::new();
            listener.cell.close(&mut wakers);
        }
        Ok(listener)
    }

    /// Puts `cell` in the channel's list, creating the channel (and taking
    /// one of the tenant's channel slots) if it has no listeners yet.
    fn attach(
        &self,
        key: &ChannelKey,
        cell: &Arc<Cell>,
        max: usize,
        channels_per_tenant: u64,
    ) -> Result<()> {
        // Each round loses only to a listen that created the channel or a
        // drop that removed it in between; past a few, report contention.
        for _ in 0..ATTACH_ROUNDS_MAX {
            let joined = self.channels.update(key, |list| {
                if list.len() >= max {
                    return Err(list.len());
                }
                list.push(Arc::clone(cell));
                Ok(())
            });
            match joined {
                Some(Ok(())) => return Ok(()),
                Some(Err(held)) => {
                    let (max, held) = (max as u64, held as u64);
                    return Err(Error::capacity(Scope::ChannelListeners, max, held));
                }
                None => {}
            }
            // A new channel: the tenant's channel slot first, then the
            // channel, unless another listener created it meanwhile.
            self.tenant_channels.take(key.0, channels_per_tenant)?;
            let (created, _) = self
                .channels
                .upsert(key.clone(), |existing| match existing {
                    // Broken twin: a channel created meanwhile is
                    // overwritten, losing its listener.
                    Some(_) if !faults::active(StoreFault::ChannelOverwrite) => Upsert::Keep(false),
                    _ => Upsert::Put(vec![Arc::clone(cell)], true),
                });
            if created {
                return Ok(());
            }
            self.tenant_channels.give(key.0);
        }
        Err(Error::InFlight)
    }

    /// Wakes every listener attached to `(tenant, channel)` now, with no
    /// payload.
    pub(crate) fn notify(&self, key: &ChannelKey) -> Result<()> {
        self.notify_with(key, &[])
    }

    /// Wakes every listener attached to `(tenant, channel)` now, each with
    /// `payload` (one copy, shared).
    pub(crate) fn notify_with(&self, key: &ChannelKey, payload: &[u8]) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::STOPPED);
        }
        // No listener anywhere: nothing to look up. A listen counts itself
        // before it attaches, so one that returned before this notify
        // started is seen here.
        if self.listeners.used() == 0 {
            return Ok(());
        }
        // Made before the shard lock is taken, so no allocation holds it.
        let shared = Payload::shared(payload);
        let mut wakers = Vec::new();
        self.channels.read(key, |list| {
            for cell in list {
                cell.signal(&shared, Missed::None, &mut wakers);
            }
        });
        wakers.into_iter().for_each(Waker::wake);
        Ok(())
    }

    /// Wakes every listener of every channel with `Missed::Unknown` and
    /// no payload: wakes may have been lost that cannot be counted (the
    /// Redis engine's Pub/Sub connection dropped), so each listener is
    /// told to look at its state again.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn wake_all(&self) {
        let mut wakers = Vec::new();
        self.channels.for_each(|_, list| {
            for cell in list {
                cell.signal(&Payload::default(), Missed::Unknown, &mut wakers);
            }
        });
        wakers.into_iter().for_each(Waker::wake);
    }

    /// The one close path: the store stopped or is gone. Every listener,
    /// blocked or async, receives what is pending and then `Closed`; new
    /// listens and notifies are refused.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let mut wakers = Vec::new();
        self.channels.for_each(|_, list| {
            for cell in list {
                cell.close(&mut wakers);
            }
        });
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Listeners attached now.
    pub(crate) fn listeners(&self) -> u64 {
        self.listeners.used()
    }

    fn detach(&self, cell: &Arc<Cell>) {
        let key: ChannelKey = (cell.tenant, Arc::clone(&cell.channel));
        let emptied = self.channels.update(&key, |list| {
            list.retain(|c| !Arc::ptr_eq(c, cell));
            list.is_empty()
        });
        if emptied == Some(true) {
            // Remove the channel unless a listen joined it meanwhile.
            let removed =
                self.channels.remove_if(
                    &key,
                    |list| {
                        if list.is_empty() {
                            Ok(())
                        } else {
                            Err(())
                        }
                    },
                );
            if matches!(removed, Some(Ok(_))) {
                self.tenant_channels.give(key.0);
            }
        }
        self.listeners.release(1);
    }
}

/// A listener on one wake channel, from [`Store::listen`](crate::Store::listen).
/// Detaches when dropped.
pub struct Listener {
    cell: Arc<Cell>,
    hub: Arc<WakeHub>,
}

impl Listener {
    /// The oldest wake queued now, if any, without waiting.
    pub fn try_recv(&self) -> Option<Wake> {
        let mut slot = lock_at(Rung::Listener, &self.cell.slot);
        match self.cell.take(&mut slot) {
            Some(Ok(wake)) => Some(wake),
            _ => None,
        }
    }

    #[cfg(feature = "native")]
    /// [`recv`](Self::recv), blocking the calling thread until the next
    /// wake; [`RecvError::Closed`] once the store has stopped or is gone and
    /// no wake is pending. Never call it on an async runtime's worker thread.
    pub fn blocking_recv(&self) -> Result<Wake, RecvError> {
        self.wait(None)
    }

    #[cfg(feature = "native")]
    /// [`blocking_recv`](Self::blocking_recv) for at most `timeout`;
    /// [`RecvError::Timeout`] if nothing came.
    pub fn blocking_recv_timeout(&self, timeout: Duration) -> Result<Wake, RecvError> {
        self.wait(Some(timeout))
    }

    /// The next wake, as a future for any executor; [`RecvError::Closed`]
    /// once the store has stopped or is gone and no wake is pending.
    /// Cancel-safe: dropping it consumes nothing. One task at a time should
    /// wait on a listener.
    ///
    /// ```compile_fail
    /// # let store = relaystore::Store::builder().build().unwrap();
    /// let listener = store.listen(relaystore::TenantId(1), "jobs").unwrap();
    /// let next: Result<relaystore::wake::Wake, relaystore::wake::RecvError> = listener.recv();
    /// ```
    pub fn recv(&self) -> WakeFuture<'_> {
        WakeFuture { listener: self }
    }

    /// Polls for the next wake, registering `cx`'s waker if none is
    /// queued: what [`recv`](Self::recv)'s future and the listener's
    /// [`Stream`](futures_core::Stream) do.
    pub fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Result<Wake, RecvError>> {
        let cell = &self.cell;
        let mut slot = lock_at(Rung::Listener, &cell.slot);
        if let Some(result) = cell.take(&mut slot) {
            return Poll::Ready(result);
        }
        if faults::active(StoreFault::WakerAfterUnlock) {
            // Broken twin: the waker is registered after the lock is given
            // up, so a notify in between finds no waker and is lost.
            drop(slot);
            slot = lock_at(Rung::Listener, &cell.slot);
        }
        // Registered under the lock `signal` takes, so no notify can slip
        // in between the look and the registration.
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    #[cfg(feature = "native")]
    fn wait(&self, timeout: Option<Duration>) -> Result<Wake, RecvError> {
        lock_at(Rung::Listener, &self.cell.slot)
            .wait_for(
                &self.cell.ready,
                timeout,
                |slot| &mut slot.sleepers,
                |slot| self.cell.take(slot),
            )
            .unwrap_or(Err(RecvError::Timeout))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.hub.detach(&self.cell);
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("tenant", &self.cell.tenant)
            .field("channel", &self.cell.channel)
            .finish_non_exhaustive()
    }
}

/// The future of [`Listener::recv`].
#[must_use = "futures do nothing unless polled"]
pub struct WakeFuture<'a> {
    listener: &'a Listener,
}

impl std::future::Future for WakeFuture<'_> {
    type Output = Result<Wake, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.listener.poll_recv(cx)
    }
}

/// The listener's wakes as an async stream, which ends once the store has
/// stopped or is gone and no wake is pending (where [`Listener::recv`]
/// answers [`RecvError::Closed`]). One task at a time should poll it.
impl futures_core::Stream for Listener {
    type Item = Wake;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Wake>> {
        self.poll_recv(cx).map(Result::ok)
    }
}

impl std::fmt::Debug for WakeFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WakeFuture").finish_non_exhaustive()
    }
}
