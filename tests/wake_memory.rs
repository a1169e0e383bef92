//! A slow listener costs bounded memory however often its channel is
//! notified: its queue holds `wake_queue_max` wakes. Alone in its binary:
//! it counts every allocation of the process, so no other test may run
//! beside it.

mod common;

use cap::Cap;
use common::ops::*;
use relaystore::wake::Missed;
use std::alloc::System;

#[global_allocator]
static HEAP: Cap<System> = Cap::new(System, usize::MAX);

#[test]
fn a_million_notifies_to_a_slow_listener_take_bounded_memory() {
    let (_c, s) = store();
    let depth = s.config().wake_queue_max;
    let slow = s.listen(T, "lobby").unwrap();
    let before = HEAP.allocated();
    for _ in 0..1_000_000 {
        s.notify(T, "lobby").unwrap();
    }
    let grown = HEAP.allocated().saturating_sub(before);
    // The queue: 32 bytes a wake without a payload.
    assert!(
        grown <= 32 * depth + 512,
        "10^6 notifies grew the heap by {grown} bytes"
    );
    let payload = [7u8; 100];
    let before = HEAP.allocated();
    for _ in 0..1_000_000 {
        s.notify_with(T, "lobby", &payload).unwrap();
    }
    let grown = HEAP.allocated().saturating_sub(before);
    // Each wake kept now holds its payload (100 bytes and two counts).
    assert!(
        grown <= (100 + 16) * depth + 512,
        "10^6 notifies with payloads grew the heap by {grown} bytes"
    );
    let first = slow.try_recv().unwrap();
    assert_eq!(first.payload.as_ref(), payload);
    assert_eq!(first.missed, Missed::Dropped(2_000_000 - depth as u64));
    let kept = std::iter::from_fn(|| slow.try_recv()).count();
    assert_eq!(kept, depth - 1);
}
