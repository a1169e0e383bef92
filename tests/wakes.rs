//! Wake channels: notify / listen, one wake per notify, payloads, the
//! bounded queue, bounds, names, close.
//! Every rule and typed refusal, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::wake::{Missed, RecvError, Wake};
use relaystore::{Error, Health, Scope, TenantId};
use std::time::Duration;

fn wake(tenant: TenantId, channel: &str) -> Wake {
    Wake::new(tenant, channel)
}

#[test]
fn a_notify_wakes_every_listener_attached_before_it_once() {
    let (_c, s) = store();
    let a = s.listen(T, "lobby").unwrap();
    let b = s.listen(T, "lobby").unwrap();
    assert_eq!(a.try_recv(), None, "nothing before a notify");
    s.notify(T, "lobby").unwrap();
    assert_eq!(a.try_recv(), Some(wake(T, "lobby")));
    assert_eq!(a.try_recv(), None, "a wake is received once");
    assert_eq!(b.try_recv(), Some(wake(T, "lobby")), "every listener");
    s.notify(T, "nobody-listens").unwrap();
}

#[test]
fn a_slow_listener_keeps_the_newest_wakes_and_counts_the_rest() {
    let (_c, s) = store();
    let depth = s.config().wake_queue_max;
    let slow = s.listen(T, "lobby").unwrap();
    let sent = 1_000u32;
    for i in 0..sent {
        s.notify_with(T, "lobby", &i.to_be_bytes()).unwrap();
    }
    let oldest_kept = sent - depth as u32;
    let first = slow.try_recv().unwrap();
    assert_eq!(first.payload.as_ref(), oldest_kept.to_be_bytes());
    assert_eq!(first.missed, Missed::Dropped(u64::from(oldest_kept)));
    for i in oldest_kept + 1..sent {
        let next = slow.try_recv().unwrap();
        assert_eq!(next.payload.as_ref(), i.to_be_bytes(), "in order");
        assert_eq!(next.missed, Missed::None);
    }
    assert_eq!(slow.try_recv(), None, "{sent} notifies, {depth} wakes");
    s.notify(T, "lobby").unwrap();
    assert_eq!(slow.try_recv(), Some(wake(T, "lobby")), "and later ones");
}

#[test]
fn one_payload_reaches_every_listener_and_is_refused_past_its_bound() {
    let (_c, s) = store_with(config().wake_payload_bytes_max(8));
    let (a, b) = (s.listen(T, "lobby").unwrap(), s.listen(T, "lobby").unwrap());
    s.notify_with(T, "lobby", b"seat 4").unwrap();
    let (wa, wb) = (a.try_recv().unwrap(), b.try_recv().unwrap());
    assert_eq!(wa, wake(T, "lobby").with_payload(b"seat 4"));
    assert!(
        wa.payload.same_copy(&wb.payload),
        "the payload is copied once for every listener"
    );
    assert_eq!(
        s.notify_with(T, "lobby", b"123456789"),
        Err(Error::InvalidArgument {
            reason: "payload is larger than wake_payload_bytes_max"
        })
    );
    assert_eq!(a.try_recv(), None, "a refused notify wakes nobody");
}

#[test]
fn a_transaction_notifies_with_its_payload_after_the_commit() {
    let (_c, s) = store_with(config().wake_payload_bytes_max(8));
    let listener = s.listen(T, "lobby").unwrap();
    let mut tx = s.begin_tx();
    assert_eq!(
        tx.notify_with(T, "lobby", b"123456789").err(),
        Some(Error::InvalidArgument {
            reason: "payload is larger than wake_payload_bytes_max"
        }),
        "checked when staged"
    );
    tx.notify_with(T, "lobby", b"first").unwrap();
    tx.notify(T, "lobby").unwrap();
    assert_eq!(listener.try_recv(), None, "nothing before the commit");
    tx.commit().unwrap();
    assert_eq!(
        listener.try_recv(),
        Some(wake(T, "lobby").with_payload(b"first"))
    );
    assert_eq!(
        listener.try_recv(),
        Some(wake(T, "lobby")),
        "in staging order"
    );
    let mut rolled_back = s.begin_tx();
    rolled_back.notify_with(T, "lobby", b"never").unwrap();
    drop(rolled_back);
    assert_eq!(listener.try_recv(), None, "a rollback wakes nobody");
}

#[test]
fn a_listener_attached_after_a_notify_sees_only_later_wakes() {
    let (_c, s) = store();
    s.notify(T, "lobby").unwrap();
    let late = s.listen(T, "lobby").unwrap();
    assert_eq!(late.try_recv(), None);
    s.notify(T, "lobby").unwrap();
    assert_eq!(late.try_recv(), Some(wake(T, "lobby")));
}

#[test]
fn channels_are_per_tenant_and_per_name() {
    let (_c, s) = store();
    let mine = s.listen(T, "lobby").unwrap();
    let other_name = s.listen(T, "lobby-2").unwrap();
    s.notify(OTHER, "lobby").unwrap();
    s.notify(T, "lobby-3").unwrap();
    assert_eq!(
        mine.try_recv(),
        None,
        "another tenant's channel of that name"
    );
    assert_eq!(other_name.try_recv(), None);
}

#[test]
fn channel_names_are_checked_on_both_sides() {
    let (_c, s) = store();
    let long = "x".repeat(s.config().name_bytes_max + 1);
    for (name, want) in [
        ("", Error::InvalidName),
        ("__internal", Error::ReservedName),
        (
            long.as_str(),
            Error::InvalidArgument {
                reason: "name is longer than name_bytes_max",
            },
        ),
    ] {
        assert_eq!(s.notify(T, name), Err(want.clone()), "notify {name:?}");
        assert_eq!(s.listen(T, name).err(), Some(want), "listen {name:?}");
    }
    assert_eq!(s.listeners(), 0, "a refused listen holds nothing");
}

#[test]
fn listeners_and_channels_are_bounded_and_freed_on_drop() {
    let (_c, s) = store_with(
        config()
            .listeners_max(4)
            .listeners_per_channel_max(2)
            .channels_per_tenant_max(2),
    );
    let full = Some;
    let a1 = s.listen(T, "a").unwrap();
    let a2 = s.listen(T, "a").unwrap();
    assert_eq!(
        s.listen(T, "a").err().and_then(|e| e.capacity_scope()),
        full(Scope::ChannelListeners)
    );
    let b1 = s.listen(T, "b").unwrap();
    assert_eq!(
        s.listen(T, "c").err().and_then(|e| e.capacity_scope()),
        full(Scope::TenantChannels)
    );
    let other = s.listen(OTHER, "c").unwrap();
    assert_eq!(s.listeners(), 4);
    assert_eq!(
        s.listen(OTHER, "d").err().and_then(|e| e.capacity_scope()),
        full(Scope::Listeners)
    );
    // Dropping the last listener of "b" frees the tenant's channel slot.
    drop(b1);
    let c1 = s.listen(T, "c").unwrap();
    // And a listener slot on "a" frees room on it.
    drop(a2);
    let a3 = s.listen(T, "a").unwrap();
    s.notify(T, "a").unwrap();
    assert_eq!(a1.try_recv(), Some(wake(T, "a")));
    assert_eq!(a3.try_recv(), Some(wake(T, "a")));
    drop((a1, a3, c1, other));
    assert_eq!(s.listeners(), 0);
}

#[test]
fn a_blocked_receiver_wakes_on_notify_and_times_out_without_one() {
    let (_c, s) = store();
    let listener = s.listen(T, "lobby").unwrap();
    assert_eq!(
        listener.blocking_recv_timeout(Duration::from_millis(20)),
        Err(RecvError::Timeout)
    );
    let notifier = {
        let s = s.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s.notify(T, "lobby").unwrap();
        })
    };
    assert_eq!(listener.blocking_recv(), Ok(wake(T, "lobby")));
    notifier.join().unwrap();
}

#[test]
fn an_async_receiver_wakes_on_notify_from_another_thread() {
    let (_c, s) = store();
    let listener = s.listen(T, "lobby").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let notifier = {
        let s = s.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s.notify(T, "lobby").unwrap();
        })
    };
    let got = runtime.block_on(listener.recv());
    assert_eq!(got, Ok(wake(T, "lobby")));
    notifier.join().unwrap();
    // Dropping a pending future consumes nothing.
    s.notify(T, "lobby").unwrap();
    drop(listener.recv());
    assert_eq!(listener.try_recv(), Some(wake(T, "lobby")));
}

#[test]
fn listeners_are_closed_when_the_store_stops_after_their_pending_wake() {
    let (_c, s) = store();
    let listener = s.listen(T, "lobby").unwrap();
    s.notify(T, "lobby").unwrap();
    s.begin_drain(Duration::ZERO).unwrap();
    assert_eq!(s.health(), Health::Stopped);
    assert_eq!(
        listener.blocking_recv(),
        Ok(wake(T, "lobby")),
        "the pending wake first"
    );
    assert_eq!(listener.blocking_recv(), Err(RecvError::Closed));
    assert_eq!(s.notify(T, "lobby"), Err(Error::STOPPED));
    assert_eq!(s.listen(T, "lobby").err(), Some(Error::STOPPED));
}

#[test]
fn listeners_are_closed_when_the_last_store_handle_goes() {
    let (_c, s) = store();
    let listener = s.listen(T, "lobby").unwrap();
    let waiter = std::thread::spawn(move || listener.blocking_recv());
    std::thread::sleep(Duration::from_millis(20));
    drop(s);
    assert_eq!(waiter.join().unwrap(), Err(RecvError::Closed));
}

/// The next item of an async stream, polled on `runtime`.
fn next_of<S: futures_core::Stream + Unpin>(
    runtime: &tokio::runtime::Runtime,
    stream: &mut S,
) -> Option<S::Item> {
    runtime.block_on(std::future::poll_fn(|cx| {
        std::pin::Pin::new(&mut *stream).poll_next(cx)
    }))
}

#[test]
fn a_listener_is_an_async_stream_that_ends_when_the_store_stops() {
    let (_c, s) = store();
    let mut listener = s.listen(T, "lobby").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    s.notify_with(T, "lobby", b"one").unwrap();
    let notifier = {
        let s = s.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s.notify_with(T, "lobby", b"two").unwrap();
        })
    };
    let first = next_of(&runtime, &mut listener).expect("a wake");
    assert_eq!(&*first.payload, b"one");
    let second = next_of(&runtime, &mut listener).expect("a wake from another thread");
    assert_eq!(&*second.payload, b"two");
    notifier.join().unwrap();
    s.begin_drain(Duration::ZERO).unwrap();
    assert_eq!(
        next_of(&runtime, &mut listener),
        None,
        "ended with the store"
    );
}
