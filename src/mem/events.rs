//! Removal events: every physical removal of a record is announced.
//!
//! Each subscriber has its own bounded buffer. When a subscriber falls
//! behind, the oldest buffered events are dropped and the subscriber's next
//! read reports [`Received::Lagged`] with how many it missed; then it goes
//! on with the newest events. Emitting never blocks on a subscriber and never
//! grows memory past `subscribers_max * subscriber_buffer_max` events.

use crate::base::error::{Error, Result, Scope};
use crate::base::faults::{self, StoreFault};
use crate::base::sync::{lock_at, Arc, AtomicU64, Condvar, Mutex, Ordering, Rung, Sleepers};
use crate::base::words::LimitSnapshot;
use crate::contract::config::Limits;
use crate::contract::events::{Collection, Event, Lag, Received, RecvError};
use crate::contract::metrics::EngineLabel;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
#[cfg(feature = "native")]
use std::time::Duration;

struct Inbox {
    /// The collections this subscriber wants: bit `Collection as usize`.
    wanted: u32,
    queue: Mutex<Queue>,
    /// Signalled on every delivery and on close, for blocking receivers.
    ready: Condvar,
    capacity: usize,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<Event>,
    /// What was dropped since the last read, reported first.
    lag: Lag,
    /// The task of an async receiver waiting on this inbox.
    waker: Option<Waker>,
    /// The store is gone: nothing more will arrive.
    closed: bool,
    /// Blocking receivers waiting now: a delivery signals the condition
    /// variable only when one waits that no signal is on its way to, as
    /// signalling is a system call.
    sleepers: Sleepers,
}

pub(crate) struct EventHub {
    inboxes: Mutex<Inboxes>,
    /// Fast path: no subscribers means nothing to lock.
    count: AtomicU64,
    /// Where `subscribers_max` is read, as it changes at run time.
    live: Arc<LimitSnapshot<Limits>>,
    buffer_max: usize,
    /// The engine whose events these are (the metrics' label).
    engine: EngineLabel,
}

/// The subscribers, and the number the next event this hub numbers gets.
#[derive(Default)]
struct Inboxes {
    list: Vec<Arc<Inbox>>,
    next_seq: u64,
    /// The store stopped or is gone: nothing more is delivered, and a
    /// subscription made now is closed from the start.
    closed: bool,
}

impl EventHub {
    pub(crate) fn new(
        live: Arc<LimitSnapshot<Limits>>,
        buffer_max: usize,
        engine: EngineLabel,
    ) -> Self {
        EventHub {
            inboxes: Mutex::new(Inboxes::default()),
            count: AtomicU64::new(0),
            live,
            buffer_max,
            engine,
        }
    }

    /// A subscription to the removal events of `collections`.
    pub(crate) fn subscribe(self: &Arc<Self>, collections: &[Collection]) -> Result<Subscription> {
        let wanted = collections
            .iter()
            .fold(0u32, |bits, &c| bits | 1 << (c as u32));
        let subscribers_max = self.live.read(|l| l.subscribers_max);
        let mut inboxes = lock_at(Rung::Hub, &self.inboxes);
        if inboxes.list.len() >= subscribers_max {
            return Err(Error::capacity(
                Scope::Subscribers,
                subscribers_max as u64,
                inboxes.list.len() as u64,
            ));
        }
        let inbox = Arc::new(Inbox {
            wanted,
            queue: Mutex::new(Queue {
                events: VecDeque::with_capacity(self.buffer_max.min(1024)),
                closed: inboxes.closed,
                ..Queue::default()
            }),
            ready: Condvar::new(),
            capacity: self.buffer_max,
        });
        inboxes.list.push(Arc::clone(&inbox));
        self.count
            .store(inboxes.list.len() as u64, Ordering::Release);
        Ok(Subscription {
            inbox,
            hub: Arc::clone(self),
        })
    }

    /// Whether anyone subscribes: an event made for no one is not made.
    pub(crate) fn subscribed(&self) -> bool {
        self.count.load(Ordering::Acquire) != 0
    }

    /// Numbers `event` (`Event::seq`: one count over every tenant, taken
    /// under the hub's lock, so every subscriber sees the numbers rise)
    /// and delivers it to every subscriber. Called after the operation,
    /// never under a map lock.
    pub(crate) fn emit(&self, event: Event) {
        self.deliver(event, true);
    }

    /// Delivers `event`, numbered already (by a remote engine), to every
    /// subscriber.
    #[cfg(feature = "redis")]
    pub(crate) fn emit_numbered(&self, event: Event) {
        self.deliver(event, false);
    }

    fn deliver(&self, mut event: Event, number: bool) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        // Delivered under the hub's lock (hub, then inbox: the only order
        // in which both are held), so an event costs no allocation unless
        // a receiver waits. Its waker runs, and a blocked receiver is
        // signalled (a system call), after every lock is given up: the
        // waker is the executor's code, and a signal made under the hub's
        // lock would hold every other emitter up for the call.
        let mut wake = Vec::new();
        let mut signal = Vec::new();
        {
            let mut inboxes = lock_at(Rung::Hub, &self.inboxes);
            if inboxes.closed {
                return;
            }
            if number {
                inboxes.next_seq += 1;
                event.seq = inboxes.next_seq;
            }
            let bit = 1 << (event.collection as u32);
            for inbox in inboxes.list.iter().filter(|i| i.wanted & bit != 0) {
                // Broken twin: a receiver that starts to wait between the
                // two holds is never signalled.
                let early = faults::active(StoreFault::SleepersReadEarly)
                    .then(|| lock_at(Rung::Inbox, &inbox.queue).sleepers.any());
                let sleeping = {
                    let mut queue = lock_at(Rung::Inbox, &inbox.queue);
                    if queue.events.len() >= inbox.capacity {
                        if let Some(dropped) = queue.events.pop_front() {
                            let (tenant, seq) = (dropped.tenant, dropped.seq);
                            queue.lag.note(tenant, seq, seq, 1);
                        }
                        crate::contract::metrics::events_dropped(self.engine, 1);
                    }
                    queue.events.push_back(event.clone());
                    wake.extend(queue.waker.take());
                    early.unwrap_or_else(|| queue.sleepers.signal_one())
                };
                // Signalled once the locks are given up, so the receiver
                // does not wake only to wait for them (a sleeper counted
                // under the inbox's lock is already waiting).
                if sleeping {
                    signal.push(Arc::clone(inbox));
                }
            }
        }
        signal.iter().for_each(|inbox| inbox.ready.notify_one());
        wake.into_iter().for_each(Waker::wake);
    }

    /// Reports `missed` events of `tenant`, numbered `from..=to`, lost
    /// before they reached this hub (a remote engine's listener found a
    /// gap) to every subscriber, as a lag.
    #[cfg(feature = "redis")]
    pub(crate) fn report_missed(&self, tenant: crate::base::ids::TenantId, from: u64, to: u64) {
        let missed = to.saturating_sub(from) + 1;
        let mut wake = Vec::new();
        {
            let inboxes = lock_at(Rung::Hub, &self.inboxes);
            for inbox in inboxes.list.iter() {
                let mut queue = lock_at(Rung::Inbox, &inbox.queue);
                queue.lag.note(tenant, from, to, missed);
                wake.extend(queue.waker.take());
                if queue.sleepers.any() {
                    inbox.ready.notify_one();
                }
            }
        }
        crate::contract::metrics::events_dropped(self.engine, missed);
        wake.into_iter().for_each(Waker::wake);
    }

    /// Subscribers now, and the most events buffered for any one of them
    /// (what the slowest reader has yet to read), for the metrics.
    pub(crate) fn backlog(&self) -> (usize, usize) {
        if self.count.load(Ordering::Acquire) == 0 {
            return (0, 0);
        }
        let inboxes = lock_at(Rung::Hub, &self.inboxes);
        let most = inboxes
            .list
            .iter()
            .map(|inbox| lock_at(Rung::Inbox, &inbox.queue).events.len())
            .max();
        (inboxes.list.len(), most.unwrap_or(0))
    }

    /// The store stopped (its drain ended) or is gone: every receiver,
    /// blocked or async, is told once it has read what is buffered, and
    /// nothing is delivered from now on. Idempotent.
    pub(crate) fn close(&self) {
        let mut wake = Vec::new();
        {
            let mut inboxes = lock_at(Rung::Hub, &self.inboxes);
            inboxes.closed = true;
            for inbox in inboxes.list.iter() {
                let mut queue = lock_at(Rung::Inbox, &inbox.queue);
                queue.closed = true;
                wake.extend(queue.waker.take());
                inbox.ready.notify_all();
            }
        }
        wake.into_iter().for_each(Waker::wake);
    }
}

/// A subscription to removal events; unsubscribes when dropped.
pub struct Subscription {
    inbox: Arc<Inbox>,
    hub: Arc<EventHub>,
}

impl Subscription {
    /// The next event, a lag report, or `None` if nothing is buffered.
    pub fn try_recv(&self) -> Option<Received> {
        let mut queue = lock_at(Rung::Inbox, &self.inbox.queue);
        self.take(&mut queue)
    }

    /// Everything buffered now, in order, without waiting.
    pub fn try_recv_all(&self) -> Vec<Received> {
        std::iter::from_fn(|| self.try_recv()).collect()
    }

    /// [`try_recv_all`](Self::try_recv_all), under its old name.
    #[deprecated(note = "renamed `try_recv_all`: a store's drain is `begin_drain` and `drained`")]
    pub fn drain(&self) -> Vec<Received> {
        self.try_recv_all()
    }

    #[cfg(feature = "native")]
    /// [`recv`](Self::recv), blocking the calling thread until an event or
    /// lag report comes; [`RecvError::Closed`] once the store has stopped
    /// (its drain ended) or is gone, and the buffer is empty. Never call it
    /// on an async runtime's worker thread.
    pub fn blocking_recv(&self) -> Result<Received, RecvError> {
        self.wait(None)
    }

    #[cfg(feature = "native")]
    /// [`blocking_recv`](Self::blocking_recv), waiting at most `timeout`
    /// ([`RecvError::Timeout`] then).
    pub fn blocking_recv_timeout(&self, timeout: Duration) -> Result<Received, RecvError> {
        self.wait(Some(timeout))
    }

    /// The next event or lag report, as a future for any executor;
    /// [`RecvError::Closed`] once the store has stopped (its drain ended)
    /// or is gone, and the buffer is empty. Cancel-safe: dropping it
    /// before it completes loses no event. A subscription wakes one
    /// waiting task: give each consumer its own subscription rather than
    /// awaiting one from several tasks at once (the last task to wait is
    /// the one woken).
    ///
    /// The wait is the future: calling `recv` without awaiting it is not a
    /// result, and there is no blocking form under this name.
    ///
    /// ```compile_fail
    /// # let store = relaystore::Store::builder().build().unwrap();
    /// let events = store.subscribe().unwrap();
    /// let next: Result<relaystore::events::Received, relaystore::events::RecvError> = events.recv();
    /// ```
    pub fn recv(&self) -> RecvFuture<'_> {
        RecvFuture { subscription: self }
    }

    /// Polls for the next event or lag report, registering `cx`'s waker if
    /// none is buffered: what [`recv`](Self::recv)'s future and the
    /// subscription's [`Stream`](futures_core::Stream) do.
    pub fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Result<Received, RecvError>> {
        let mut queue = lock_at(Rung::Inbox, &self.inbox.queue);
        if let Some(received) = self.take(&mut queue) {
            return Poll::Ready(Ok(received));
        }
        if queue.closed {
            return Poll::Ready(Err(RecvError::Closed));
        }
        // Registered under the same lock a delivery takes, so no event can
        // slip in between the look and the registration.
        queue.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Takes the next item from a locked queue: a lag report first.
    fn take(&self, queue: &mut Queue) -> Option<Received> {
        if let Some(lag) = queue.lag.take() {
            return Some(lag);
        }
        queue.events.pop_front().map(Received::Event)
    }

    #[cfg(feature = "native")]
    fn wait(&self, timeout: Option<Duration>) -> Result<Received, RecvError> {
        lock_at(Rung::Inbox, &self.inbox.queue)
            .wait_for(
                &self.inbox.ready,
                timeout,
                |queue| &mut queue.sleepers,
                |queue| match self.take(queue) {
                    Some(received) => Some(Ok(received)),
                    None if queue.closed => Some(Err(RecvError::Closed)),
                    None => None,
                },
            )
            .unwrap_or(Err(RecvError::Timeout))
    }
}

/// The future of [`Subscription::recv`].
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a> {
    subscription: &'a Subscription,
}

impl std::future::Future for RecvFuture<'_> {
    type Output = Result<Received, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.subscription.poll_recv(cx)
    }
}

/// The subscription's events and lag reports as an async stream, which
/// ends once the store has stopped (its drain ended) or is gone, and
/// every buffered event has been read (where [`Subscription::recv`]
/// answers [`RecvError::Closed`]).
impl futures_core::Stream for Subscription {
    type Item = Received;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Received>> {
        self.poll_recv(cx).map(Result::ok)
    }
}

impl std::fmt::Debug for RecvFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvFuture").finish_non_exhaustive()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut inboxes = lock_at(Rung::Hub, &self.hub.inboxes);
        inboxes.list.retain(|i| !Arc::ptr_eq(i, &self.inbox));
        self.hub
            .count
            .store(inboxes.list.len() as u64, Ordering::Release);
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").finish_non_exhaustive()
    }
}
