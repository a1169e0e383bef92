//! Loom models of wake channels and other blocking receivers: a notify
//! racing a listener's async wait and its blocking wait, a removal event
//! racing a blocked subscriber (once, and twice in a row), two listens
//! creating one channel, and an
//! append racing a new follower. Each runs the real `Store` and has
//! a broken twin the model catches: in both, a wake is lost.
#![cfg(relaystore_loom)]

#[path = "common.rs"]
mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use relaystore::model::faults::{store_fault, StoreFault};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::time::ManualClock;
use relaystore::{Store, StoreConfig, TenantId};
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

const T: TenantId = TenantId(1);

fn store() -> Store {
    let config = StoreConfig::default()
        .subscribers_max(1)
        .subscriber_buffer_max(8);
    Store::new(config, Arc::new(ManualClock::new())).unwrap()
}

fn name(fault: StoreFault, model: &str) -> String {
    if fault == StoreFault::None {
        model.to_string()
    } else {
        format!("{model} ({fault:?})")
    }
}

/// A waker that records that it was woken.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A listener's future polled once while another thread notifies: either
/// the poll sees the wake, or the notify finds the registered waker. A
/// wake is never lost between the look and the registration.
fn poll_vs_notify(fault: StoreFault) {
    common::explore(&name(fault, "poll_vs_notify"), move || {
        store_fault(fault);
        let store = store();
        let listener = store.listen(T, "lobby").unwrap();
        let notifier = {
            let store = store.clone();
            thread::spawn(move || store.notify(T, "lobby").unwrap())
        };
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(Arc::clone(&flag));
        let mut future = pin!(listener.recv());
        let polled = future.as_mut().poll(&mut Context::from_waker(&waker));
        notifier.join().unwrap();
        match polled {
            Poll::Ready(result) => assert!(result.is_ok(), "{result:?}"),
            Poll::Pending => assert!(
                flag.0.load(Ordering::SeqCst),
                "the notify was lost: the future is pending and was never woken"
            ),
        }
    });
}

/// A wait for the drain's end polled once while another thread stops the
/// store and sweeps (which ends the drain and opens the latch): either the
/// poll sees it ended, or the opening finds the registered waker.
fn poll_vs_drain_end(fault: StoreFault) {
    common::explore(&name(fault, "poll_vs_drain_end"), move || {
        store_fault(fault);
        let store = store();
        let ender = {
            let store = store.clone();
            thread::spawn(move || {
                store.begin_drain(std::time::Duration::ZERO).unwrap();
                store.sweep();
            })
        };
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(Arc::clone(&flag));
        let mut future = pin!(store.drained());
        let polled = future.as_mut().poll(&mut Context::from_waker(&waker));
        ender.join().unwrap();
        if polled.is_pending() {
            assert!(
                flag.0.load(Ordering::SeqCst),
                "the drain's end was lost: the future is pending and was never woken"
            );
        }
    });
}

/// A receiver blocking in `recv` while another thread notifies: the
/// receiver returns the wake whichever comes first. The notify signals the
/// condition variable after giving up the listener's lock, which is safe
/// only because a receiver counts itself a sleeper and starts waiting
/// under that lock in one step.
fn recv_vs_notify(fault: StoreFault) {
    common::explore(&name(fault, "recv_vs_notify"), move || {
        store_fault(fault);
        // Kept from dropping while unwinding, as in `append_vs_follow`.
        let store = ManuallyDrop::new(store());
        let listener = ManuallyDrop::new(store.listen(T, "lobby").unwrap());
        let notifier = {
            let store = Store::clone(&store);
            thread::spawn(move || store.notify(T, "lobby").unwrap())
        };
        let wake = listener.blocking_recv().unwrap();
        notifier.join().unwrap();
        assert_eq!(&*wake.channel, "lobby");
        drop(ManuallyDrop::into_inner(listener));
        drop(ManuallyDrop::into_inner(store));
    });
}

/// A subscriber blocking in `recv` while another thread revokes a lease:
/// the subscriber returns the removal event whichever comes first (the
/// event hub signals after giving up the inbox's lock, like a notify).
fn recv_vs_emit(fault: StoreFault) {
    common::explore(&name(fault, "recv_vs_emit"), move || {
        store_fault(fault);
        let store = ManuallyDrop::new(store());
        let events = ManuallyDrop::new(store.subscribe().unwrap());
        let grant = store
            .grant(T, "host", std::time::Duration::from_secs(60), None)
            .unwrap();
        let revoker = {
            let store = Store::clone(&store);
            thread::spawn(move || store.revoke(T, grant.id).unwrap())
        };
        let received = events.blocking_recv().unwrap();
        revoker.join().unwrap();
        assert!(
            matches!(received, relaystore::events::Received::Event(_)),
            "{received:?}"
        );
        drop(ManuallyDrop::into_inner(events));
        drop(ManuallyDrop::into_inner(store));
    });
}

/// A subscriber blocking in `recv` twice while another thread revokes two
/// leases: it returns both events. A delivery signals a blocked receiver
/// only when no signal is on its way to it already, and a receiver that
/// wakes settles its signal, so the second event, if it comes while the
/// receiver waits again, is signalled too.
fn recv_twice_vs_two_emits(fault: StoreFault) {
    common::explore(&name(fault, "recv_twice_vs_two_emits"), move || {
        store_fault(fault);
        let store = ManuallyDrop::new(store());
        let events = ManuallyDrop::new(store.subscribe().unwrap());
        let ttl = std::time::Duration::from_secs(60);
        let first = store.grant(T, "host", ttl, None).unwrap();
        let second = store.grant(T, "host", ttl, None).unwrap();
        let revoker = {
            let store = Store::clone(&store);
            thread::spawn(move || {
                store.revoke(T, first.id).unwrap();
                store.revoke(T, second.id).unwrap();
            })
        };
        for _ in 0..2 {
            let received = events.blocking_recv().unwrap();
            assert!(
                matches!(received, relaystore::events::Received::Event(_)),
                "{received:?}"
            );
        }
        revoker.join().unwrap();
        drop(ManuallyDrop::into_inner(events));
        drop(ManuallyDrop::into_inner(store));
    });
}

/// Two listens on a channel nobody listens to yet, then a notify: both
/// listeners are woken, and the channel is counted once.
fn two_listens_create_one_channel(fault: StoreFault) {
    common::explore(&name(fault, "two_listens_create_one_channel"), move || {
        store_fault(fault);
        let store = store();
        let other = {
            let store = store.clone();
            thread::spawn(move || store.listen(T, "lobby").unwrap())
        };
        let mine = store.listen(T, "lobby").unwrap();
        let theirs = other.join().unwrap();
        store.notify(T, "lobby").unwrap();
        assert!(mine.try_recv().is_some(), "a listener lost its wake");
        assert!(theirs.try_recv().is_some(), "a listener lost its wake");
    });
}

/// An append racing a new follower's first blocking read: the follower
/// returns the entry whichever comes first (it reads before it waits, and
/// it listens before it reads), and never waits for a wake that will not
/// come.
fn append_vs_follow(fault: StoreFault) {
    common::explore(&name(fault, "append_vs_follow"), move || {
        store_fault(fault);
        // Kept from dropping while unwinding: the broken twin ends in loom's
        // deadlock report, after which loom objects cannot be dropped.
        let store = ManuallyDrop::new(store());
        let config = StreamConfig::new(8, 1024, WhenFull::Refuse);
        store.create_stream(T, "log", config).unwrap();
        let appender = {
            let store = Store::clone(&store);
            thread::spawn(move || store.append(T, "log", b"x", None).unwrap())
        };
        let mut follower = ManuallyDrop::new(store.follow(T, "log", "worker").unwrap());
        let read = follower.blocking_next(8).unwrap();
        assert_eq!(appender.join().unwrap(), 0);
        assert_eq!(read.entries.len(), 1, "the entry was missed");
        drop(ManuallyDrop::into_inner(follower));
        drop(ManuallyDrop::into_inner(store));
    });
}

#[test]
fn an_append_racing_a_new_follower_is_never_missed() {
    append_vs_follow(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_waiting_before_reading_misses_an_earlier_append() {
    append_vs_follow(StoreFault::WaitBeforeRead);
}

#[test]
fn notify_racing_an_async_wait_is_never_lost() {
    poll_vs_notify(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_waker_registered_after_unlock_loses_the_wake() {
    poll_vs_notify(StoreFault::WakerAfterUnlock);
}

#[test]
fn the_end_of_a_drain_racing_an_async_wait_is_never_lost() {
    poll_vs_drain_end(StoreFault::None);
}

#[test]
#[should_panic(expected = "the drain's end was lost")]
fn broken_twin_drain_waker_registered_after_unlock_loses_the_end() {
    poll_vs_drain_end(StoreFault::WakerAfterUnlock);
}

#[test]
fn notify_racing_a_blocked_receiver_is_never_lost() {
    recv_vs_notify(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_sleepers_read_before_the_wake_loses_it() {
    recv_vs_notify(StoreFault::SleepersReadEarly);
}

#[test]
fn a_removal_racing_a_blocked_subscriber_is_never_lost() {
    recv_vs_emit(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_sleepers_read_before_the_event_loses_it() {
    recv_vs_emit(StoreFault::SleepersReadEarly);
}

#[test]
fn two_removals_racing_a_subscriber_blocked_twice_are_both_received() {
    recv_twice_vs_two_emits(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_a_signal_never_settled_loses_the_second_event() {
    recv_twice_vs_two_emits(StoreFault::SignalsNeverSettled);
}

#[test]
fn two_listens_creating_one_channel_both_stay_attached() {
    two_listens_create_one_channel(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_channel_overwrite_loses_a_listener() {
    two_listens_create_one_channel(StoreFault::ChannelOverwrite);
}
