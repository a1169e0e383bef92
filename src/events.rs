//! Removal events: every physical removal of a record is announced.
//!
//! Each subscriber has its own bounded buffer. When a subscriber falls
//! behind, the oldest buffered events are dropped and the subscriber's next
//! read reports [`Received::Lagged`] with how many it missed; then it goes
//! on with the newest events. Emitting never blocks on a subscriber and never
//! grows memory past `subscribers_max * subscriber_buffer_max` events.

use crate::error::{Error, Result, Scope};
use crate::ids::{AttemptId, LeaseId, TenantId};
use crate::sync::{lock_at, Arc, AtomicU64, Mutex, Ordering, Rung};
use std::collections::VecDeque;

/// A collection of the store: what a removal event names, and what a
/// capacity refusal's [`Scope`] names.
///
/// Join attempts are one table with two bounds. [`Attempts`](Self::Attempts)
/// names pending or bound attempts (bounded by `attempts_max`, per tenant
/// and per listing); [`Replay`](Self::Replay) names every attempt record,
/// consumed tokens remembered for replay rejection included (bounded by
/// `replay_max`), which is the table's own ceiling.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Collection {
    /// Leases.
    Leases,
    /// Published listings.
    Listings,
    /// Presence records.
    Presence,
    /// Join attempts (pending or bound).
    Attempts,
    /// Attempt records including the replay memory of consumed tokens (as
    /// an event: a consumed token's memory left).
    Replay,
    /// Idempotency records.
    Idempotency,
    /// Revocation tombstones.
    Tombstones,
    /// Named locks.
    Locks,
}

impl Collection {
    /// Every collection, in declaration order: what per-collection data is
    /// indexed by (`Collection as usize`).
    pub const ALL: [Collection; 8] = [
        Collection::Leases,
        Collection::Listings,
        Collection::Presence,
        Collection::Attempts,
        Collection::Replay,
        Collection::Idempotency,
        Collection::Tombstones,
        Collection::Locks,
    ];

    /// The collection's name, as a refusal's message shows it.
    pub(crate) fn scope_name(self) -> &'static str {
        match self {
            Collection::Leases => "leases",
            Collection::Listings => "listings",
            Collection::Presence => "presence",
            Collection::Attempts => "attempts",
            Collection::Replay => "replay",
            Collection::Idempotency => "idempotency",
            Collection::Tombstones => "tombstones",
            Collection::Locks => "locks",
        }
    }
}

// `ALL[i] as usize == i`: per-collection arrays are indexed by the enum.
const _: () = {
    let mut i = 0;
    while i < Collection::ALL.len() {
        assert!(Collection::ALL[i] as usize == i);
        i += 1;
    }
};

/// Why a record was removed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// Its deadline passed.
    Expired,
    /// It was explicitly revoked.
    Revoked,
    /// Its parent was revoked or removed.
    Cascaded,
    /// Its owner removed it (unpublish, leave, cancel, release).
    Released,
    /// Its one-time token was consumed.
    Consumed,
    /// The store drained.
    Drained,
}

/// The id of a removed record.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RecordId {
    /// A lease or its tombstone.
    Lease(LeaseId),
    /// A listing, by key.
    Listing(Arc<str>),
    /// A presence record, by member.
    Member(Arc<str>),
    /// A join attempt or its replay memory.
    Attempt(AttemptId),
    /// An idempotency record or a lock, by key or name.
    Key(Arc<str>),
}

/// One removal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Where the record was.
    pub collection: Collection,
    /// Whose it was.
    pub tenant: TenantId,
    /// Which it was.
    pub id: RecordId,
    /// Why it went.
    pub cause: Cause,
}

/// What a subscriber reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// The next event.
    Event(Event),
    /// The subscriber fell behind and `missed` events were dropped.
    Lagged {
        /// How many events were dropped since the last read.
        missed: u64,
    },
}

struct Inbox {
    queue: Mutex<VecDeque<Event>>,
    missed: AtomicU64,
    capacity: usize,
}

pub(crate) struct EventHub {
    inboxes: Mutex<Vec<Arc<Inbox>>>,
    /// Fast path: no subscribers means nothing to lock.
    count: AtomicU64,
    subscribers_max: usize,
    buffer_max: usize,
}

impl EventHub {
    pub(crate) fn new(subscribers_max: usize, buffer_max: usize) -> Self {
        EventHub {
            inboxes: Mutex::new(Vec::new()),
            count: AtomicU64::new(0),
            subscribers_max,
            buffer_max,
        }
    }

    pub(crate) fn subscribe(self: &Arc<Self>) -> Result<Subscription> {
        let mut inboxes = lock_at(Rung::Hub, &self.inboxes);
        if inboxes.len() >= self.subscribers_max {
            return Err(Error::CapacityExceeded {
                scope: Scope::Subscribers,
            });
        }
        let inbox = Arc::new(Inbox {
            queue: Mutex::new(VecDeque::with_capacity(self.buffer_max.min(1024))),
            missed: AtomicU64::new(0),
            capacity: self.buffer_max,
        });
        inboxes.push(Arc::clone(&inbox));
        self.count.store(inboxes.len() as u64, Ordering::Release);
        Ok(Subscription {
            inbox,
            hub: Arc::clone(self),
        })
    }

    /// Delivers `event` to every subscriber. Called after the operation,
    /// never under a map lock.
    pub(crate) fn emit(&self, event: Event) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        // Delivered under the hub's lock (hub, then inbox: the only order
        // in which both are held), so an event costs no allocation.
        let inboxes = lock_at(Rung::Hub, &self.inboxes);
        for inbox in inboxes.iter() {
            let mut queue = lock_at(Rung::Inbox, &inbox.queue);
            if queue.len() >= inbox.capacity {
                queue.pop_front();
                inbox.missed.fetch_add(1, Ordering::AcqRel);
            }
            queue.push_back(event.clone());
        }
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
        let missed = self.inbox.missed.swap(0, Ordering::AcqRel);
        if missed > 0 {
            return Some(Received::Lagged { missed });
        }
        lock_at(Rung::Inbox, &self.inbox.queue)
            .pop_front()
            .map(Received::Event)
    }

    /// Everything buffered now, in order.
    pub fn drain(&self) -> Vec<Received> {
        std::iter::from_fn(|| self.try_recv()).collect()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut inboxes = lock_at(Rung::Hub, &self.hub.inboxes);
        inboxes.retain(|i| !Arc::ptr_eq(i, &self.inbox));
        self.hub
            .count
            .store(inboxes.len() as u64, Ordering::Release);
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").finish_non_exhaustive()
    }
}
