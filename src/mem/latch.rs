//! A one-shot latch: it opens once, and from then on every waiter goes on,
//! a future or a blocked thread alike. The end of a drain is one.
//!
//! Locks: one mutex (rung `Latch`, a leaf) over the open flag and the
//! wakers of the futures waiting now. A future registers its waker under
//! the lock `open` sets the flag under, so an opening never slips between
//! a future's look and its registration; wakers run after the lock is
//! given up. A future that is dropped takes its waker back, so the list
//! holds at most one waker per future alive and pending.

use crate::base::faults::{self, StoreFault};
use crate::base::sync::{lock_at, Condvar, Mutex, Rung, Sleepers};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

pub(crate) struct Latch {
    state: Mutex<State>,
    opened: Condvar,
}

#[derive(Default)]
struct State {
    open: bool,
    /// The next future's number, which its waker is filed under.
    next: u64,
    /// The wakers of the futures pending now, by their numbers.
    wakers: Vec<(u64, Waker)>,
    /// Threads blocked in a wait now (a signal is a system call, so it is
    /// sent only when one is).
    sleepers: Sleepers,
}

impl Latch {
    pub(crate) fn new() -> Self {
        Latch {
            state: Mutex::new(State::default()),
            opened: Condvar::new(),
        }
    }

    /// Opens the latch and wakes every waiter. Opening it again does
    /// nothing.
    pub(crate) fn open(&self) {
        let (wakers, sleepers) = {
            let mut state = lock_at(Rung::Latch, &self.state);
            state.open = true;
            (std::mem::take(&mut state.wakers), state.sleepers.any())
        };
        // A sleeper counted above waits on the condition variable already
        // (it counts itself and waits atomically, under the lock), so a
        // signal sent after the lock is given up reaches it.
        if sleepers {
            self.opened.notify_all();
        }
        for (_, waker) in wakers {
            waker.wake();
        }
    }

    #[cfg(all(test, not(relaystore_loom)))]
    pub(crate) fn is_open(&self) -> bool {
        lock_at(Rung::Latch, &self.state).open
    }

    /// A future that resolves once the latch is open.
    pub(crate) fn wait(&self) -> LatchWait<'_> {
        LatchWait {
            latch: self,
            filed: None,
        }
    }

    /// Blocks the calling thread until the latch is open, for at most
    /// `timeout` (`None`: without limit); whether it opened.
    #[cfg(feature = "native")]
    pub(crate) fn blocking_wait(&self, timeout: Option<std::time::Duration>) -> bool {
        lock_at(Rung::Latch, &self.state)
            .wait_for(
                &self.opened,
                timeout,
                |state| &mut state.sleepers,
                |state| state.open.then_some(()),
            )
            .is_some()
    }
}

/// The future of a wait for a [`Latch`] to open.
#[must_use = "futures do nothing unless polled"]
pub(crate) struct LatchWait<'a> {
    latch: &'a Latch,
    /// The number this future's waker is filed under, once it is.
    filed: Option<u64>,
}

impl std::future::Future for LatchWait<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let latch = self.latch;
        let mut state = lock_at(Rung::Latch, &latch.state);
        if state.open {
            drop(state);
            self.filed = None;
            return Poll::Ready(());
        }
        if faults::active(StoreFault::WakerAfterUnlock) {
            // Broken twin: the waker is filed after the lock is given up,
            // so an opening in between finds no waker and is lost.
            drop(state);
            state = lock_at(Rung::Latch, &latch.state);
        }
        let number = match self.filed {
            Some(number) => number,
            None => {
                state.next += 1;
                state.next
            }
        };
        match state.wakers.iter_mut().find(|(n, _)| *n == number) {
            Some((_, waker)) => waker.clone_from(cx.waker()),
            None => state.wakers.push((number, cx.waker().clone())),
        }
        drop(state);
        self.filed = Some(number);
        Poll::Pending
    }
}

impl Drop for LatchWait<'_> {
    fn drop(&mut self) {
        if let Some(number) = self.filed {
            lock_at(Rung::Latch, &self.latch.state)
                .wakers
                .retain(|(n, _)| *n != number);
        }
    }
}

impl std::fmt::Debug for LatchWait<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatchWait").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(wait: &mut LatchWait<'_>, count: &Arc<Count>) -> Poll<()> {
        let waker = Waker::from(Arc::clone(count));
        Pin::new(wait).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn every_pending_future_is_woken_once_when_the_latch_opens() {
        let latch = Latch::new();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let mut a = latch.wait();
        let mut b = latch.wait();
        assert_eq!(poll(&mut a, &count), Poll::Pending);
        // A second poll of the same future files no second waker.
        assert_eq!(poll(&mut a, &count), Poll::Pending);
        assert_eq!(poll(&mut b, &count), Poll::Pending);
        latch.open();
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        assert_eq!(poll(&mut a, &count), Poll::Ready(()));
        assert_eq!(poll(&mut latch.wait(), &count), Poll::Ready(()));
        assert!(latch.is_open());
    }

    #[test]
    fn a_dropped_future_takes_its_waker_back() {
        let latch = Latch::new();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        for _ in 0..100 {
            let mut wait = latch.wait();
            assert_eq!(poll(&mut wait, &count), Poll::Pending);
        }
        assert!(lock_at(Rung::Latch, &latch.state).wakers.is_empty());
        latch.open();
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
    }

    #[cfg(feature = "native")]
    #[test]
    fn a_blocked_thread_goes_on_when_the_latch_opens_and_a_timeout_says_it_did_not() {
        let latch = Latch::new();
        assert!(!latch.blocking_wait(Some(std::time::Duration::from_millis(5))));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| latch.blocking_wait(None));
            latch.open();
            assert!(waiter.join().unwrap());
        });
        assert!(latch.blocking_wait(Some(std::time::Duration::ZERO)));
    }
}
