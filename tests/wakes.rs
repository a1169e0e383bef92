//! Wake channels: notify / listen, coalescing, bounds, names, close.
//! Every rule and typed refusal, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::wake::{RecvError, Wake};
use relaystore::{Error, Health, Scope, TenantId};
use std::sync::Arc;
use std::time::Duration;

fn wake(tenant: TenantId, channel: &str) -> Wake {
    Wake {
        tenant,
        channel: Arc::from(channel),
    }
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
fn wakes_coalesce_until_received() {
    let (_c, s) = store();
    let slow = s.listen(T, "lobby").unwrap();
    for _ in 0..1_000 {
        s.notify(T, "lobby").unwrap();
    }
    assert_eq!(slow.try_recv(), Some(wake(T, "lobby")));
    assert_eq!(slow.try_recv(), None, "1,000 notifies, one wake");
    s.notify(T, "lobby").unwrap();
    assert_eq!(slow.try_recv(), Some(wake(T, "lobby")), "and later ones");
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
