#![allow(unsafe_code)] // a global allocator is an unsafe trait to implement
//! The datagram path allocates nothing: with an allocation, a permission
//! and a channel in place, the relay's thread relays ChannelData and Send
//! indications to a peer and the peer's datagrams back (as ChannelData and
//! as Data indications) without a single heap allocation. A counting
//! allocator counts what the relay's thread allocates.

mod client;

use client::{peer_socket, send_indication, success, Client, RelayThread};
use relaystore::time::ManualClock;
use relaystore::Store;
use relaystore_turn::{state, Config, Records, Relay};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

struct Counting;

static RELAY_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator unchanged; the counting reads a
// thread-local flag (no allocation) and bumps an atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            RELAY_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: a pointer this allocator (the system's) handed out.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            RELAY_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn relaying_a_datagram_allocates_nothing() {
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        min_port: 48000,
        max_port: 48999,
        realm: client::REALM.to_string(),
        users: vec![("alice".to_string(), "secret".to_string())],
        ..Config::default()
    };
    let store = Store::builder()
        .config(state::store_config(&config))
        .clock(Arc::new(ManualClock::new()))
        .without_expiry_driver()
        .build()
        .unwrap();
    let relay = Relay::bind(config, Records::Memory(store)).unwrap();
    let relay = RelayThread::spawn(relay, || COUNTED.with(|c| c.set(true)));
    let handle = &relay.handle;
    let counters = &handle.counters;
    let bound = peer_socket();
    let unbound = peer_socket();
    let mut client = Client::new(handle.local_addr, "alice", "secret");
    let relayed = Client::relayed(&client.allocate());
    assert!(success(&client.bind(0x4001, bound.local_addr().unwrap())));
    assert!(success(&client.permit(unbound.local_addr().unwrap())));
    // One round first: buffers and tables the loop sizes once.
    let mut frame = vec![0x40, 0x01, 0, 4];
    frame.extend_from_slice(b"warm");
    client.socket.send_to(&frame, client.server).unwrap();
    relay.wait_for(|c| &c.to_peers, 1);
    let before = RELAY_ALLOCATIONS.load(Ordering::Relaxed);

    let send = send_indication(unbound.local_addr().unwrap(), b"send");
    const ROUNDS: u64 = 200;
    let mut buf = [0u8; 256];
    for _ in 0..ROUNDS {
        client.socket.send_to(&frame, client.server).unwrap(); // ChannelData out
        client.socket.send_to(&send, client.server).unwrap(); // Send indication
        bound.recv_from(&mut buf).unwrap();
        unbound.recv_from(&mut buf).unwrap();
        bound.send_to(b"back", relayed).unwrap(); // ChannelData in
        unbound.send_to(b"back", relayed).unwrap(); // Data indication
        client.receive();
        client.receive();
    }
    relay.wait_for(|c| &c.to_clients, 2 * ROUNDS);
    let during = RELAY_ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert_eq!(counters.to_peers.load(Ordering::Relaxed), 1 + 2 * ROUNDS);
    assert_eq!(counters.dropped.load(Ordering::Relaxed), 0);
    assert_eq!(
        during,
        0,
        "the relay's thread allocated {during} times while relaying {} datagrams",
        4 * ROUNDS
    );
}
