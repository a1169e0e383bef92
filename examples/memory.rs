//! Heap bytes per live record, measured with a counting allocator:
//! leases, listings and pending join attempts in the store at 10^5 and 10^6
//! records, next to what the same leases cost in the engine alone
//! (`TtlMap`), a `Mutex<HashMap>` + `BinaryHeap` store, and moka with
//! per-entry expiry, and a bare `DashMap` holding only a key and a word (the
//! floor for any design on a sharded map); and stream entries with 64-byte
//! payloads, next to the same payloads in a `VecDeque` ring and a bounded
//! `crossbeam-channel`; and the store's other records (presence, locks,
//! tombstones, idempotency records, consumed tokens' replay records). Everything a structure
//! allocates counts: map buckets, timers, indexes, per-record allocations.
//!
//! ```text
//! cargo run --release --example memory            # 10^5 and 10^6
//! cargo run --release --example memory -- 100000  # one size
//! ```

use cap::Cap;
use relaystore::time::SystemClock;
use relaystore::{Store, StoreConfig, TenantId, TenantQuota, TtlConfig, TtlMap};
use std::alloc::System;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static HEAP: Cap<System> = Cap::new(System, usize::MAX);

const TTL: Duration = Duration::from_secs(600);
/// A 16-byte holder id, as the capacity target assumes.
const HOLDER: &str = "host-0123456789a";

fn heap() -> usize {
    HEAP.allocated()
}

/// Bytes per record that `build` leaves allocated, dropping what it built
/// afterwards.
fn per_record<T>(n: u64, build: impl FnOnce(u64) -> T) -> f64 {
    let before = heap();
    let built = build(n);
    let bytes = heap().saturating_sub(before);
    drop(built);
    bytes as f64 / n as f64
}

fn config(n: u64) -> StoreConfig {
    StoreConfig::default()
        .leases_max(n * 2)
        .listings_max(n * 2)
        .attempts_max(n * 2)
        .replay_max(n * 2)
        .tenant(
            TenantQuota::default()
                .leases_max(n * 2)
                .listings_max(n * 2)
                .attempts_max(n * 2)
                .replay_max(n * 2),
        )
        .listings_per_lease_max(16)
        .attempts_per_listing_max(64)
}

/// A config with room for `n` of every record, store-wide and per tenant.
fn roomy(n: u64) -> StoreConfig {
    let room = n * 2;
    config(n)
        .presence_max(room)
        .locks_max(room)
        .tombstones_max(room)
        .idempotency_max(room)
        .tenant(
            config(n)
                .tenant
                .presence_max(room)
                .locks_max(room)
                .idempotency_max(room),
        )
}

/// Heap bytes per record of the collections a relay holds besides leases,
/// listings and pending attempts: presence, named locks, tombstones,
/// idempotency records and consumed tokens' replay records. A record that
/// cannot be made alone is measured as the difference between two stores
/// that differ only in it.
fn other_collections(n: u64) -> Vec<(&'static str, f64)> {
    let t = TenantId(1);
    let store = |config: StoreConfig| Store::builder().config(config).build().unwrap();
    let presence = per_record(n, |n| {
        let s = store(roomy(n));
        for i in 0..n {
            s.heartbeat(t, &format!("member-{i:08}"), TTL, None, None)
                .unwrap();
        }
        s
    });
    // A lock lives while its guard does: the guards are kept, and their
    // vector (not the store's) is left out.
    let s = store(roomy(n));
    let mut guards = Vec::with_capacity(n as usize);
    let before = heap();
    for i in 0..n {
        guards.push(
            s.try_lock(t, &format!("lock-{i:08}"), HOLDER, TTL, None)
                .unwrap(),
        );
    }
    let lock = (heap() - before) as f64 / n as f64;
    drop(guards);
    drop(s);
    // Granted then revoked: with tombstones kept (60 s) against the same
    // with tombstones gone (swept after 1 ms).
    let revoked = |tombstone_ttl: Duration| {
        per_record(n, |n| {
            let s = store(roomy(n).tombstone_ttl(tombstone_ttl));
            let ids: Vec<_> = (0..n)
                .map(|_| s.grant(t, HOLDER, TTL, None).unwrap().id)
                .collect();
            for id in ids {
                s.revoke(t, id).unwrap();
            }
            std::thread::sleep(Duration::from_millis(50));
            s.sweep();
            s
        })
    };
    let tombstone = revoked(Duration::from_secs(60)) - revoked(Duration::from_millis(1));
    // Grants with an idempotency key against grants without.
    let granted = |keyed: bool| {
        per_record(n, |n| {
            let s = store(roomy(n));
            for i in 0..n {
                let key = format!("req-{i:012}");
                s.grant(t, HOLDER, TTL, keyed.then_some(key.as_str()))
                    .unwrap();
            }
            s
        })
    };
    let idempotency = granted(true) - granted(false);
    // Consumed tokens: the growth of a store with its listings in place
    // while attempts are begun, bound and consumed.
    let s = store(roomy(n));
    let lease = s.grant(t, HOLDER, TTL, None).unwrap().id;
    s.publish(t, lease, "lobby", b"", None).unwrap();
    let addr = std::net::SocketAddr::from(([203, 0, 113, 7], 40_000));
    let before = heap();
    for _ in 0..n {
        let ticket = s
            .begin_join(t, "lobby", "client-01234567", TTL, None)
            .unwrap();
        s.bind_endpoint(t, ticket.attempt, &ticket.token, addr)
            .unwrap();
        s.consume(t, &ticket.token, None).unwrap();
    }
    let replay = (heap() - before) as f64 / n as f64;
    vec![
        ("store presence record (no lease)", presence),
        ("store named lock", lock),
        ("store tombstone (revoked lease)", tombstone),
        ("store idempotency record", idempotency),
        ("store consumed token's replay record", replay),
    ]
}

struct PerEntry;

impl moka::Expiry<u64, [u8; 16]> for PerEntry {
    fn expire_after_create(
        &self,
        _: &u64,
        _: &[u8; 16],
        _: std::time::Instant,
    ) -> Option<Duration> {
        Some(TTL)
    }
}

fn main() {
    let sizes: Vec<u64> = match std::env::args().nth(1) {
        Some(n) => vec![n.parse().expect("a record count")],
        None => vec![100_000, 1_000_000],
    };
    println!("{:<44}{:>14}{:>14}", "heap bytes per live record", "", "");
    for n in sizes {
        let t = TenantId(1);
        let lease = per_record(n, |n| {
            let s = Store::builder().config(config(n)).build().unwrap();
            for _ in 0..n {
                s.grant(t, HOLDER, TTL, None).unwrap();
            }
            s
        });
        // Listings and attempts: measured as the growth over a store that
        // already holds their leases and listings.
        // Built with its expiry driver, so a slow build of 10^6 records
        // never reads as a stalled store (which refuses joins).
        let store = Store::builder().config(config(n)).build().unwrap();
        let leases: Vec<_> = (0..n.div_ceil(16))
            .map(|_| store.grant(t, HOLDER, TTL, None).unwrap().id)
            .collect();
        let before = heap();
        for i in 0..n {
            store
                .publish(
                    t,
                    leases[(i / 16) as usize],
                    &format!("lobby-{i:08}"),
                    b"mode=ffa;slots=8",
                    None,
                )
                .unwrap();
        }
        let listing = (heap() - before) as f64 / n as f64;
        let before = heap();
        let mut tickets = Vec::with_capacity(n as usize);
        let ticket_bytes = heap() - before;
        let before = heap();
        for i in 0..n {
            tickets.push(
                store
                    .begin_join(
                        t,
                        &format!("lobby-{:08}", i / 64 * 64),
                        "client-01234567",
                        TTL,
                        None,
                    )
                    .unwrap(),
            );
        }
        let attempt = (heap() - before - ticket_bytes) as f64 / n as f64;
        drop(tickets);
        drop(store);

        let ttl_map = per_record(n, |n| {
            let m = TtlMap::new(
                TtlConfig {
                    entries_max: n * 2,
                    ..TtlConfig::default()
                },
                Arc::new(SystemClock::new()),
            )
            .unwrap();
            for k in 0..n {
                m.insert(k, [7u8; 16], TTL).unwrap();
            }
            m
        });
        let baseline = per_record(n, |n| {
            let mut map: HashMap<u64, (u64, [u8; 16])> = HashMap::new();
            let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
            for k in 0..n {
                map.insert(k, (600_000, [7; 16]));
                heap.push(Reverse((600_000, k)));
            }
            std::sync::Mutex::new((map, heap))
        });
        let moka = per_record(n, |n| {
            let c: moka::sync::Cache<u64, [u8; 16]> = moka::sync::Cache::builder()
                .max_capacity(n * 2)
                .expire_after(PerEntry)
                .build();
            for k in 0..n {
                c.insert(k, [7; 16]);
            }
            c.run_pending_tasks();
            c
        });
        // The floor of any design on a sharded map: a lease-sized key and
        // one word of state, nothing else.
        let floor = per_record(n, |n| {
            let map = dashmap::DashMap::with_hasher(ahash::RandomState::new());
            for k in 0..n {
                map.insert((1u64, k), AtomicU64::new(600_000));
            }
            map
        });
        // Stream entries with 64-byte payloads, all in one stream, against
        // the same payloads (as `Arc<[u8]>`) in a ring and a channel.
        const PAYLOAD: [u8; 64] = [7; 64];
        let stream = per_record(n, |n| {
            let store = Store::new(
                config(n)
                    .stream_entries_max(n as usize)
                    .stream_bytes_max(n as usize * PAYLOAD.len())
                    // The store-wide budgets must hold the one stream too.
                    .stream_entries_total_max(n)
                    .stream_bytes_total_max(n * PAYLOAD.len() as u64),
                Arc::new(SystemClock::new()),
            )
            .unwrap();
            let retention = relaystore::stream::StreamConfig::new(
                n as usize,
                n as usize * PAYLOAD.len(),
                relaystore::stream::WhenFull::Refuse,
            );
            store.create_stream(TenantId(1), "log", retention).unwrap();
            for _ in 0..n {
                store.append(TenantId(1), "log", &PAYLOAD, None).unwrap();
            }
            store
        });
        let ring = per_record(n, |n| {
            let mut ring = std::collections::VecDeque::with_capacity(n as usize);
            for _ in 0..n {
                ring.push_back(Arc::<[u8]>::from(&PAYLOAD[..]));
            }
            std::sync::Mutex::new(ring)
        });
        let channel = per_record(n, |n| {
            let (tx, rx) = crossbeam_channel::bounded(n as usize);
            for _ in 0..n {
                tx.send(Arc::<[u8]>::from(&PAYLOAD[..])).unwrap();
            }
            (tx, rx)
        });
        println!("records: {n}");
        println!("  {:<42}{:>10.0}", "store lease (16-byte holder)", lease);
        println!("  {:<42}{:>10.0}", "store listing (16-byte attrs)", listing);
        println!("  {:<42}{:>10.0}", "store pending join attempt", attempt);
        println!(
            "  {:<42}{:>10.0}",
            "engine entry (TtlMap<u64, [u8; 16]>)", ttl_map
        );
        println!("  {:<42}{:>10.0}", "Mutex<HashMap> + BinaryHeap", baseline);
        println!("  {:<42}{:>10.0}", "moka with per-entry expiry", moka);
        println!(
            "  {:<42}{:>10.0}",
            "DashMap<(u64, u64), AtomicU64> (floor)", floor
        );
        println!("  lease / moka: {:.2}", lease / moka);
        for (name, bytes) in other_collections(n) {
            println!("  {name:<42}{bytes:>10.0}");
        }
        println!("stream entries (64-byte payloads): {n}");
        println!("  {:<42}{:>10.0}", "store stream entry", stream);
        println!("  {:<42}{:>10.0}", "Mutex<VecDeque<Arc<[u8]>>>", ring);
        println!(
            "  {:<42}{:>10.0}",
            "crossbeam bounded channel of Arc<[u8]>", channel
        );
    }
}
