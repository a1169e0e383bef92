//! A slow listener costs O(1) memory however often its channel is
//! notified. Alone in its binary: it counts every allocation of the
//! process, so no other test may run beside it.

mod common;

use cap::Cap;
use common::ops::*;
use relaystore::wake::Wake;
use std::alloc::System;
use std::sync::Arc;

#[global_allocator]
static HEAP: Cap<System> = Cap::new(System, usize::MAX);

fn wake(tenant: relaystore::TenantId, channel: &str) -> Wake {
    Wake {
        tenant,
        channel: Arc::from(channel),
    }
}

#[test]
fn a_million_notifies_to_a_slow_listener_take_no_memory() {
    let (_c, s) = store();
    let slow = s.listen(T, "lobby").unwrap();
    s.notify(T, "lobby").unwrap();
    let before = HEAP.allocated();
    for _ in 0..1_000_000 {
        s.notify(T, "lobby").unwrap();
    }
    let grown = HEAP.allocated().saturating_sub(before);
    assert!(grown < 4096, "10^6 notifies grew the heap by {grown} bytes");
    assert_eq!(slow.try_recv(), Some(wake(T, "lobby")));
    assert_eq!(slow.try_recv(), None);
}
