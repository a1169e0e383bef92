//! A handle's own removals, delivered once (ADR 0068).
//!
//! A removal made by a call of this handle arrives twice: in the call's
//! reply, and as the copy the function published on the store's channel
//! for every handle, which this handle's listener reads too once something
//! subscribed. The handle's subscribers get whichever copy comes first;
//! the other is skipped. A call dropped before its reply came (a timeout,
//! `select!`) so still reaches its own handle's subscribers, through the
//! channel, and a reply that beats the channel is delivered before the
//! call returns.
//!
//! A first copy waits for its second at most [`COPY_WAIT_MIN`] or the call
//! timeout, whichever is longer (a reply comes within the call timeout or
//! never), and at most [`OWN_COPIES_MAX`] first copies wait at once; one
//! forgotten earlier is delivered again if its second copy still comes.
//! While the listener is not connected, replies wait for nothing: their
//! channel copies are lost (the listener reports the gap).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most removals of a handle's own calls that wait for their second
/// copy at once; past it the oldest is forgotten. Each takes a 40-byte
/// map entry (plus the map's spare room) and a 32-byte place in the
/// arrival order, which holds at most twice as many: a few MB in all.
pub const OWN_COPIES_MAX: usize = 65_536;

/// How long a first copy waits for its second, at least: far longer than
/// a loopback or LAN Pub/Sub delivery.
pub const COPY_WAIT_MIN: Duration = Duration::from_secs(5);

/// Where a copy of a removal came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Via {
    /// The reply of the call that made it.
    Reply,
    /// The store's channel, read by the handle's listener.
    Channel,
}

/// The first copies of a handle's own removals still waiting for their
/// second.
pub(super) struct OwnRemovals {
    /// Whether the listener reads the channel: set before it subscribes,
    /// cleared while it is disconnected.
    listening: AtomicBool,
    wait: Duration,
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    /// (tenant, removal number) → the copy delivered, and when it came.
    first: HashMap<(u64, u64), (Via, Instant)>,
    /// The same keys in the order they came; a key whose second copy came
    /// (or was made again since) stays here until pruned.
    order: VecDeque<(Instant, u64, u64)>,
}

impl OwnRemovals {
    /// Nothing waiting; not listening. `call_timeout` is the handle's.
    pub(super) fn new(call_timeout: Duration) -> Self {
        OwnRemovals {
            listening: AtomicBool::new(false),
            wait: call_timeout.max(COPY_WAIT_MIN),
            waiting: Mutex::new(Waiting::default()),
        }
    }

    /// The listener reads the channel (`true`: set before it subscribes,
    /// so no reply it will copy goes unrecorded) or lost it.
    pub(super) fn set_listening(&self, on: bool) {
        self.listening.store(on, Ordering::Release);
    }

    /// For each of `tenant`'s removals numbered `first..first + count`,
    /// arriving `via`, whether it is the first copy to arrive (to
    /// deliver); the first copies are recorded for the second to find.
    /// `None` when every one is (nothing to compare: no removal, or a
    /// reply while nothing listens), at the cost of nothing.
    pub(super) fn firsts(
        &self,
        tenant: u64,
        first: u64,
        count: usize,
        via: Via,
    ) -> Option<Vec<bool>> {
        if count == 0 || (via == Via::Reply && !self.listening.load(Ordering::Acquire)) {
            return None;
        }
        Some(self.firsts_at(tenant, first, count, via, Instant::now()))
    }

    /// [`firsts`](Self::firsts) at `now`, for one listening.
    fn firsts_at(
        &self,
        tenant: u64,
        first: u64,
        count: usize,
        via: Via,
        now: Instant,
    ) -> Vec<bool> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let answer = (first..)
            .take(count)
            .map(|n| match waiting.first.get(&(tenant, n)) {
                Some(&(seen, _)) if seen != via => {
                    waiting.first.remove(&(tenant, n));
                    false
                }
                // The same copy twice: never delivered twice.
                Some(_) => false,
                None => {
                    waiting.first.insert((tenant, n), (via, now));
                    waiting.order.push_back((now, tenant, n));
                    true
                }
            })
            .collect();
        waiting.prune(now, self.wait);
        answer
    }

    /// How many first copies wait (for tests).
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.waiting.lock().unwrap().first.len()
    }
}

impl Waiting {
    /// Forgets first copies older than `wait` and, past
    /// [`OWN_COPIES_MAX`], the oldest; drops keys whose second copy came.
    fn prune(&mut self, now: Instant, wait: Duration) {
        while let Some(&(at, tenant, n)) = self.order.front() {
            let live = matches!(self.first.get(&(tenant, n)), Some(&(_, when)) if when == at);
            let keep =
                now.saturating_duration_since(at) < wait && self.first.len() <= OWN_COPIES_MAX;
            if live && keep {
                break;
            }
            self.order.pop_front();
            if live {
                self.first.remove(&(tenant, n));
            }
        }
        if self.order.len() > 2 * OWN_COPIES_MAX {
            let first = &self.first;
            self.order
                .retain(|&(at, t, n)| matches!(first.get(&(t, n)), Some(&(_, when)) if when == at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn listening() -> OwnRemovals {
        let own = OwnRemovals::new(MS * 500);
        own.set_listening(true);
        own
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn an_entry_is_the_size_the_cap_is_documented_with() {
        assert_eq!(std::mem::size_of::<((u64, u64), (Via, Instant))>(), 40);
        assert_eq!(std::mem::size_of::<(Instant, u64, u64)>(), 32);
    }

    #[test]
    fn whichever_copy_comes_first_is_delivered_and_the_other_skipped() {
        let own = listening();
        let now = Instant::now();
        assert_eq!(own.firsts_at(7, 1, 2, Via::Reply, now), [true, true]);
        // The channel's copy of both, and of a third the reply never had
        // (its call was dropped).
        assert_eq!(
            own.firsts_at(7, 1, 3, Via::Channel, now),
            [false, false, true]
        );
        assert_eq!(own.waiting(), 1);
        // Another tenant's numbers are its own.
        assert_eq!(own.firsts_at(8, 3, 1, Via::Reply, now), [true]);
        // The reply of the third comes late: skipped.
        assert_eq!(own.firsts_at(7, 3, 1, Via::Reply, now), [false]);
        assert_eq!(own.firsts_at(8, 3, 1, Via::Channel, now), [false]);
        assert_eq!(own.waiting(), 0);
    }

    #[test]
    fn without_a_listener_a_reply_waits_for_nothing() {
        let own = OwnRemovals::new(MS * 500);
        assert_eq!(own.firsts(7, 1, 2, Via::Reply), None, "all first");
        assert_eq!(own.waiting(), 0);
        own.set_listening(true);
        assert_eq!(own.firsts(7, 3, 1, Via::Reply), Some(vec![true]));
        assert_eq!(own.waiting(), 1);
        assert_eq!(own.firsts(7, 3, 0, Via::Channel), None, "no removal");
    }

    #[test]
    fn a_first_copy_waits_at_most_its_wait() {
        let own = listening();
        let now = Instant::now();
        assert_eq!(own.wait, COPY_WAIT_MIN, "the call timeout is shorter");
        assert_eq!(own.firsts_at(7, 1, 1, Via::Channel, now), [true]);
        let later = now + COPY_WAIT_MIN - MS;
        assert_eq!(own.firsts_at(7, 2, 1, Via::Channel, later), [true]);
        assert_eq!(own.waiting(), 2, "the first still waits");
        let past = now + COPY_WAIT_MIN;
        assert_eq!(own.firsts_at(7, 3, 1, Via::Channel, past), [true]);
        assert_eq!(own.waiting(), 2, "the first was forgotten");
        // Its reply, come too late, is delivered again: what a first copy
        // forgotten costs.
        assert_eq!(own.firsts_at(7, 1, 1, Via::Reply, past), [true]);
        let long = OwnRemovals::new(COPY_WAIT_MIN * 2);
        assert_eq!(long.wait, COPY_WAIT_MIN * 2, "a longer call timeout");
    }

    #[test]
    fn at_most_own_copies_max_wait_and_settled_keys_are_dropped() {
        let own = listening();
        let now = Instant::now();
        let n = OWN_COPIES_MAX as u64;
        assert!(own
            .firsts_at(1, 1, OWN_COPIES_MAX, Via::Reply, now)
            .iter()
            .all(|&f| f));
        assert_eq!(own.waiting(), OWN_COPIES_MAX);
        assert_eq!(own.firsts_at(1, n + 1, 1, Via::Reply, now), [true]);
        assert_eq!(own.waiting(), OWN_COPIES_MAX, "the oldest forgotten");
        // The others' copies are skipped, settling them.
        let copies = own.firsts_at(1, 2, OWN_COPIES_MAX, Via::Channel, now);
        assert!(copies.iter().all(|&f| !f));
        assert_eq!(own.waiting(), 0);
        // The forgotten one's copy is delivered a second time.
        assert_eq!(own.firsts_at(1, 1, 1, Via::Channel, now), [true]);
        for k in 0..3 * n {
            own.firsts_at(2, k + 1, 1, Via::Reply, now);
            own.firsts_at(2, k + 1, 1, Via::Channel, now);
        }
        let order = own.waiting.lock().unwrap().order.len();
        assert!(
            order <= 2 * OWN_COPIES_MAX + 1,
            "{order} keys kept in order"
        );
    }
}
