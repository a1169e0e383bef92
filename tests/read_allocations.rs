//! A read of a lease, a listing or a presence record allocates nothing
//! when its names fit inline (up to `Name::INLINE_BYTES`): a relay reads
//! these on every datagram and every lookup, and an allocation per read
//! is a cost every thread pays and a lock some allocators take. (A longer
//! listing key or member name costs one allocation per read: the lookup's
//! own copy of the name.) Attributes of up to `Attrs::INLINE_BYTES`
//! are inline too: reading them allocates nothing, and neither does a
//! heartbeat that replaces them.
//!
//! One test in this binary, with no expiry driver and a manual clock, so
//! nothing else allocates while it counts.

use cap::Cap;
use relaystore::time::ManualClock;
use relaystore::{Attrs, Name, Store, StoreConfig, TenantId};
use std::alloc::System;
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static HEAP: Cap<System> = Cap::new(System, usize::MAX);

/// Heap bytes `f` allocated (freed or not), over `rounds` calls.
fn allocated_by(rounds: usize, mut f: impl FnMut()) -> usize {
    let before = HEAP.total_allocated();
    for _ in 0..rounds {
        f();
    }
    HEAP.total_allocated() - before
}

#[test]
fn inline_names_and_attributes_cost_no_allocation() {
    let store = Store::new(StoreConfig::default(), Arc::new(ManualClock::new())).unwrap();
    let t = TenantId(1);
    let ttl = Duration::from_secs(60);
    let lease = store.grant(t, "host-0123456789a", ttl, None).unwrap();
    let key = "lobby-0123456789abcdefg"; // 23 bytes: the longest kept inline
    assert_eq!(key.len(), Name::INLINE_BYTES);
    store
        .publish(t, lease.id, key, b"mode=ffa;slots=8", None)
        .unwrap();
    store
        .heartbeat(t, "member-0123", ttl, Some(b"ready"), Some(lease.id))
        .unwrap();
    // Warm: whatever a first read sets up once is not a per-read cost.
    store.get_lease(t, lease.id).unwrap();
    store.get_listing(t, key).unwrap();
    store.get_presence(t, "member-0123").unwrap();

    let lease_bytes = allocated_by(100, || {
        assert_eq!(
            store.get_lease(t, lease.id).unwrap().holder,
            "host-0123456789a"
        );
    });
    let listing_bytes = allocated_by(100, || {
        assert_eq!(store.get_listing(t, key).unwrap().key, key);
    });
    let presence_bytes = allocated_by(100, || {
        let seen = store.get_presence(t, "member-0123").unwrap();
        assert_eq!(seen.member, "member-0123");
        assert_eq!(seen.attrs, b"ready");
    });
    assert_eq!(
        (lease_bytes, listing_bytes, presence_bytes),
        (0, 0, 0),
        "heap bytes allocated by 100 reads of a lease, a listing and a presence record"
    );
    // A heartbeat that replaces short attributes keeps them inline.
    let status = b"ready;players=3;map=07";
    assert_eq!(status.len(), Attrs::INLINE_BYTES);
    let heartbeat_bytes = allocated_by(100, || {
        store
            .heartbeat(t, "member-0123", ttl, Some(status), Some(lease.id))
            .unwrap();
    });
    assert_eq!(
        heartbeat_bytes, 0,
        "heap bytes allocated by 100 heartbeats that replace 22 bytes of attributes"
    );
    assert_eq!(store.get_presence(t, "member-0123").unwrap().attrs, status);
}
