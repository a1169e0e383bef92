//! Reads of one hot record beside reads of uniform keys, per collection:
//! what a relay sees when every joiner looks up one popular lobby, or
//! every datagram checks one allocation.
//!
//! Groups `read_hot/{lease,listing,presence}`: `hot/Nt` has every thread
//! read the same record, `uniform/Nt` spreads the reads over all 10^4
//! records of the collection; N is 1 and 2 threads. Throughput is in
//! reads per second over all threads, so criterion's figures compare
//! directly: two threads' `hot` over one thread's is how a hot record
//! scales. The store is `Store::builder().build()` (the system clock, the
//! expiry driver running), as a relay builds it.
//!
//! Before the timed groups the bench prints how many heap bytes one read
//! of each collection allocates (a counting allocator; untimed; the
//! driver's own allocations in that moment count too, so read a figure
//! well under a word as none).

#[path = "support/mod.rs"]
mod support;

use cap::Cap;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use relaystore::{Store, StoreConfig, TenantId};
use std::alloc::System;
use std::hint::black_box;
use std::time::Duration;
use support::run_threads;

/// Counts heap bytes, to report what one read allocates.
#[global_allocator]
static HEAP: Cap<System> = Cap::new(System, usize::MAX);

const N: u64 = 10_000;
const THREADS: [usize; 2] = [1, 2];
const TTL: Duration = Duration::from_secs(600);
const TENANTS: u64 = 16;
/// The hot record's index.
const HOT: u64 = 4_242;

struct Fixture {
    store: Store,
    leases: Vec<(TenantId, relaystore::LeaseId)>,
}

fn tenant(i: u64) -> TenantId {
    TenantId(i % TENANTS)
}

fn listing(i: u64) -> String {
    format!("lobby-{i:05}")
}

fn member(i: u64) -> String {
    format!("member-{i:05}")
}

/// `N` leases, each with a listing, and `N` members' presence.
fn fixture() -> Fixture {
    let config = StoreConfig::default()
        .leases_max(N * 2)
        .listings_max(N * 2)
        .presence_max(N * 2)
        .tenant(
            relaystore::TenantQuota::default()
                .leases_max(N * 2)
                .listings_max(N * 2)
                .presence_max(N * 2),
        );
    let store = Store::builder().config(config).build().expect("a store");
    let leases = (0..N)
        .map(|i| {
            let lease = store
                .grant(tenant(i), "host-0123456789a", TTL, None)
                .unwrap();
            store
                .publish(tenant(i), lease.id, &listing(i), b"mode=ffa;slots=8", None)
                .unwrap();
            store
                .heartbeat(tenant(i), &member(i), TTL, None, None)
                .unwrap();
            (tenant(i), lease.id)
        })
        .collect();
    Fixture { store, leases }
}

/// Reads record `i` of `collection`.
fn read(f: &Fixture, collection: &str, i: u64, names: &(Vec<String>, Vec<String>)) {
    let t = tenant(i);
    match collection {
        "lease" => {
            black_box(f.store.get_lease(t, f.leases[i as usize].1).unwrap());
        }
        "listing" => {
            black_box(f.store.get_listing(t, &names.0[i as usize]).unwrap());
        }
        _ => {
            black_box(f.store.get_presence(t, &names.1[i as usize]).unwrap());
        }
    }
}

fn spread(t: usize, i: u64) -> u64 {
    let mut z = (i ^ ((t as u64) << 48)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= z >> 29;
    z % N
}

fn hot_reads(c: &mut Criterion) {
    let f = std::sync::Arc::new(fixture());
    let names = std::sync::Arc::new((
        (0..N).map(listing).collect::<Vec<_>>(),
        (0..N).map(member).collect::<Vec<_>>(),
    ));
    for collection in ["lease", "listing", "presence"] {
        let before = HEAP.total_allocated();
        for _ in 0..1_000 {
            read(&f, collection, HOT, &names);
        }
        let per_read = (HEAP.total_allocated() - before) as f64 / 1_000.0;
        println!("read_hot/{collection}: {per_read:.1} heap bytes allocated per read");
    }
    for collection in ["lease", "listing", "presence"] {
        let mut group = c.benchmark_group(format!("read_hot/{collection}"));
        for threads in THREADS {
            group.throughput(Throughput::Elements(threads as u64));
            for (keys, hot) in [("hot", true), ("uniform", false)] {
                let (f, names) = (f.clone(), names.clone());
                group.bench_function(BenchmarkId::new(keys, format!("{threads}t")), |b| {
                    b.iter_custom(|iters| {
                        let (f, names) = (f.clone(), names.clone());
                        run_threads(threads, iters, move |t, i| {
                            let k = if hot { HOT } else { spread(t, i) };
                            read(&f, collection, k, &names);
                        })
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = hot_reads
}
criterion_main!(benches);
