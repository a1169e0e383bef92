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

/// Heap the process may allocate besides the listener's queue while a
/// million notifies run (the test harness's own threads): far below one
/// byte per notify.
const SLACK: usize = 2048;

#[test]
fn a_million_notifies_to_a_slow_listener_take_bounded_memory() {
    let (_c, s) = store();
    let depth = s.config().wake_queue_max;
    let slow = s.listen(T, "lobby").unwrap();
    // The queue filled once: from here on a notify drops as much as it
    // adds.
    let empty = HEAP.allocated();
    for _ in 0..depth {
        s.notify(T, "lobby").unwrap();
    }
    let full = HEAP.allocated().saturating_sub(empty);
    assert!(
        full <= 32 * depth + SLACK,
        "a full queue of {depth} wakes took {full} bytes"
    );
    let before = HEAP.allocated();
    for _ in 0..1_000_000 {
        s.notify(T, "lobby").unwrap();
    }
    let grown = HEAP.allocated().saturating_sub(before);
    assert!(
        grown <= SLACK,
        "10^6 notifies grew the heap by {grown} bytes"
    );
    // With payloads: each wake kept holds its payload (100 bytes and two
    // counts), and a dropped wake gives its payload back.
    let payload = [7u8; 100];
    for _ in 0..depth {
        s.notify_with(T, "lobby", &payload).unwrap();
    }
    let before = HEAP.allocated();
    for _ in 0..1_000_000 {
        s.notify_with(T, "lobby", &payload).unwrap();
    }
    let grown = HEAP.allocated().saturating_sub(before);
    assert!(
        grown <= SLACK,
        "10^6 notifies with payloads grew the heap by {grown} bytes"
    );
    let first = slow.try_recv().unwrap();
    assert_eq!(first.payload.as_ref(), payload);
    let sent = 2 * (depth as u64 + 1_000_000);
    assert_eq!(first.missed, Missed::Dropped(sent - depth as u64));
    let kept = std::iter::from_fn(|| slow.try_recv()).count();
    assert_eq!(kept, depth - 1);
}
