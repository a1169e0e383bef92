//! Reads of one hot record beside reads of uniform keys, per collection:
//! what a relay sees when every joiner looks up one popular lobby, or
//! every datagram checks one allocation.
//!
//! Groups `read_hot/{lease,listing,presence,presence_leased,record}`
//! (`presence_leased`: a presence record attached to a lease, whose read
//! checks the lease too; `record`: a record of a declared kind under its
//! lease, the same shape): `hot/Nt` has every thread
//! read the same record, `uniform/Nt` spreads the reads over all 10^4
//! records of the collection; N is 1 and 2 threads. Throughput is in
//! reads per second over all threads, so criterion's figures compare
//! directly: two threads' `hot` over one thread's is how a hot record
//! scales. The store is `Store::builder().build()` (the system clock, the
//! expiry driver running), as a relay builds it.
//!
//! Group `read_hot/floor` reads the same shape of record from structures
//! that are not the store, in the same run, so the store's figures read
//! as ratios against them:
//!
//! - `seq`: records in an array of slots, each a sequence word and six
//!   words of record, read by a sequence check (load the word, copy the
//!   words, load the word again): a read that writes nothing shared, the
//!   floor a hot record's scaling is judged against;
//! - `papaya`, `dashmap`, `mutex`: the same records by `(tenant, name)` in
//!   a papaya map (reads write nothing shared), a dashmap (a shard's
//!   reader-writer lock) and one `Mutex<HashMap>`;
//! - `hashbrown_id/1t` and `hashbrown_name/1t`: one thread's get of a
//!   record from a plain `HashMap` (std's, which is hashbrown) by a lease's
//!   id and by `(tenant, name)`, with no synchronisation at all: what one
//!   thread's lease read, and listing or presence read, is held against;
//! - `clock/1t`: one reading of the production clock
//!   (`relaystore::time::SystemClock`), which every read of a record with
//!   a deadline takes once, and no hash map read does: the part of a
//!   store read no layout of the record removes.
//!
//! - `coarse_clock/1t`: one reading of a
//!   [`relaystore::time::CoarseClock`], a load of the word its thread
//!   sets every millisecond.
//!
//! Group `read_hot/coarse_clock`: one thread's read of each hot record
//! (`{kind}/hot/1t`) in the same store built on a `CoarseClock` ticking
//! every millisecond instead of the system clock.
//!
//! Before the timed groups the bench prints how many heap bytes one read
//! of each collection allocates (a counting allocator; untimed; the
//! driver's own allocations in that moment count too, so read a figure
//! well under a word as none).

#[path = "support/mod.rs"]
mod support;

use cap::Cap;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dashmap::DashMap;
use relaystore::time::{Clock, CoarseClock, SystemClock, COARSE_TICK_MIN};
use relaystore::{Store, StoreConfig, TenantId};
use std::alloc::System;
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Mutex;
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
    kind: relaystore::Kind,
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

fn leased(i: u64) -> String {
    format!("leased-{i:05}")
}

/// `N` leases, each with a listing, and `N` members' presence, in a
/// store on the system clock.
fn fixture() -> Fixture {
    fixture_on(None)
}

/// [`fixture`], on `clock` if one is given.
fn fixture_on(clock: Option<std::sync::Arc<dyn Clock>>) -> Fixture {
    let config = StoreConfig::default()
        .leases_max(N * 2)
        .listings_max(N * 2)
        .presence_max(N * 2)
        .declare(relaystore::RecordKind::new("member").ttl_max(TTL))
        .tenant(
            relaystore::TenantQuota::default()
                .leases_max(N * 2)
                .listings_max(N * 2)
                .presence_max(N * 2),
        );
    let builder = Store::builder().config(config);
    let builder = match clock {
        Some(clock) => builder.clock(clock),
        None => builder,
    };
    let store = builder.build().expect("a store");
    let kind = store.kind("member").expect("declared");
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
            store
                .heartbeat(tenant(i), &leased(i), TTL, None, Some(lease.id))
                .unwrap();
            store
                .put_record(tenant(i), kind, lease.id, &member(i), TTL, None)
                .unwrap();
            (tenant(i), lease.id)
        })
        .collect();
    Fixture {
        store,
        leases,
        kind,
    }
}

/// Reads record `i` of `collection`.
fn read(f: &Fixture, collection: &str, i: u64, names: &(Vec<String>, Vec<String>, Vec<String>)) {
    let t = tenant(i);
    match collection {
        "lease" => {
            black_box(f.store.get_lease(t, f.leases[i as usize].1).unwrap());
        }
        "listing" => {
            black_box(f.store.get_listing(t, &names.0[i as usize]).unwrap());
        }
        "presence" => {
            black_box(f.store.get_presence(t, &names.1[i as usize]).unwrap());
        }
        "presence_leased" => {
            black_box(f.store.get_presence(t, &names.2[i as usize]).unwrap());
        }
        _ => {
            let (lease, name) = (f.leases[i as usize].1, &names.1[i as usize]);
            black_box(f.store.get_record(t, f.kind, lease, name).unwrap());
        }
    }
}

fn spread(t: usize, i: u64) -> u64 {
    let mut z = (i ^ ((t as u64) << 48)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= z >> 29;
    z % N
}

/// A record of the floors: six words, the size of a lease's version,
/// deadline, fence and a holder's inline bytes.
#[derive(Clone, Copy)]
struct Words([u64; 6]);

impl Words {
    fn of(i: u64) -> Words {
        Words([i, i + 1, i + 2, i + 3, i + 4, i + 5])
    }
}

/// A slot read by a sequence check: even while no write is at work.
struct SeqSlot {
    seq: AtomicU64,
    words: [AtomicU64; 6],
}

impl SeqSlot {
    fn new(w: Words) -> SeqSlot {
        SeqSlot {
            seq: AtomicU64::new(0),
            words: w.0.map(AtomicU64::new),
        }
    }

    fn read(&self) -> Words {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let words = Words(std::array::from_fn(|k| {
                    self.words[k].load(Ordering::Relaxed)
                }));
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before {
                    return words;
                }
            }
            std::hint::spin_loop();
        }
    }
}

/// The floors' records, `N` of each, keyed as the store's are.
struct Floors {
    seq: Vec<SeqSlot>,
    papaya: papaya::HashMap<(u64, String), Words, ahash::RandomState>,
    dashmap: DashMap<(u64, String), Words, ahash::RandomState>,
    mutex: Mutex<HashMap<(u64, String), Words, ahash::RandomState>>,
    by_id: HashMap<u64, Words, ahash::RandomState>,
    by_name: HashMap<(u64, String), Words, ahash::RandomState>,
    keys: Vec<(u64, String)>,
}

fn floors() -> Floors {
    let keys: Vec<_> = (0..N).map(|i| (i % TENANTS, listing(i))).collect();
    let floors = Floors {
        seq: (0..N).map(|i| SeqSlot::new(Words::of(i))).collect(),
        papaya: papaya::HashMap::builder()
            .hasher(ahash::RandomState::new())
            .build(),
        dashmap: DashMap::with_hasher(ahash::RandomState::new()),
        mutex: Mutex::new(HashMap::with_hasher(ahash::RandomState::new())),
        by_id: (0..N).map(|i| (i << 32 | 1, Words::of(i))).collect(),
        by_name: keys.iter().cloned().zip((0..N).map(Words::of)).collect(),
        keys,
    };
    {
        let papaya = floors.papaya.pin();
        let mut mutex = floors.mutex.lock().unwrap();
        for (i, key) in floors.keys.iter().enumerate() {
            let w = Words::of(i as u64);
            papaya.insert(key.clone(), w);
            floors.dashmap.insert(key.clone(), w);
            mutex.insert(key.clone(), w);
        }
    }
    floors
}

/// Reads record `i` of floor `floor`, as the store's read copies a record.
fn read_floor(f: &Floors, floor: &str, i: u64) {
    let key = &f.keys[i as usize];
    let w = match floor {
        "seq" => f.seq[i as usize].read(),
        "papaya" => *f.papaya.pin().get(key).unwrap(),
        "dashmap" => *f.dashmap.get(key).unwrap(),
        "mutex" => *f.mutex.lock().unwrap().get(key).unwrap(),
        "hashbrown_id" => *f.by_id.get(&(i << 32 | 1)).unwrap(),
        _ => *f.by_name.get(key).unwrap(),
    };
    black_box(w);
}

fn floor_reads(c: &mut Criterion) {
    let f = std::sync::Arc::new(floors());
    let mut group = c.benchmark_group("read_hot/floor");
    for floor in ["seq", "papaya", "dashmap", "mutex"] {
        for threads in THREADS {
            group.throughput(Throughput::Elements(threads as u64));
            for (keys, hot) in [("hot", true), ("uniform", false)] {
                let f = f.clone();
                let id = BenchmarkId::new(format!("{floor}/{keys}"), format!("{threads}t"));
                group.bench_function(id, |b| {
                    b.iter_custom(|iters| {
                        let f = f.clone();
                        run_threads(threads, iters, move |t, i| {
                            let k = if hot { HOT } else { spread(t, i) };
                            read_floor(&f, floor, k);
                        })
                    })
                });
            }
        }
    }
    group.throughput(Throughput::Elements(1));
    let clock = std::sync::Arc::new(SystemClock::new());
    group.bench_function(BenchmarkId::new("clock", "1t"), |b| {
        b.iter_custom(|iters| {
            let clock = clock.clone();
            run_threads(1, iters, move |_, _| {
                black_box(clock.now());
            })
        })
    });
    let coarse = std::sync::Arc::new(CoarseClock::start(COARSE_TICK_MIN).expect("a clock"));
    group.bench_function(BenchmarkId::new("coarse_clock", "1t"), |b| {
        b.iter_custom(|iters| {
            let clock = coarse.clone();
            run_threads(1, iters, move |_, _| {
                black_box(clock.now());
            })
        })
    });
    for floor in ["hashbrown_id", "hashbrown_name"] {
        let f = f.clone();
        group.bench_function(BenchmarkId::new(floor, "1t"), |b| {
            b.iter_custom(|iters| {
                let f = f.clone();
                run_threads(1, iters, move |_, _| read_floor(&f, floor, HOT))
            })
        });
    }
    group.finish();
}

fn hot_reads(c: &mut Criterion) {
    let f = std::sync::Arc::new(fixture());
    let names = std::sync::Arc::new((
        (0..N).map(listing).collect::<Vec<_>>(),
        (0..N).map(member).collect::<Vec<_>>(),
        (0..N).map(leased).collect::<Vec<_>>(),
    ));
    for collection in ["lease", "listing", "presence", "presence_leased", "record"] {
        let before = HEAP.total_allocated();
        for _ in 0..1_000 {
            read(&f, collection, HOT, &names);
        }
        let per_read = (HEAP.total_allocated() - before) as f64 / 1_000.0;
        println!("read_hot/{collection}: {per_read:.1} heap bytes allocated per read");
    }
    for collection in ["lease", "listing", "presence", "presence_leased", "record"] {
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

/// One thread's read of each hot record in a store on a [`CoarseClock`]
/// ticking every millisecond: the same reads as `read_hot/{kind}/hot/1t`
/// with the clock's reading a load.
fn coarse_clock_reads(c: &mut Criterion) {
    let clock = std::sync::Arc::new(CoarseClock::start(COARSE_TICK_MIN).expect("a clock"));
    let f = std::sync::Arc::new(fixture_on(Some(clock)));
    let names = std::sync::Arc::new((
        (0..N).map(listing).collect::<Vec<_>>(),
        (0..N).map(member).collect::<Vec<_>>(),
        (0..N).map(leased).collect::<Vec<_>>(),
    ));
    let mut group = c.benchmark_group("read_hot/coarse_clock");
    group.throughput(Throughput::Elements(1));
    for collection in ["lease", "listing", "presence"] {
        let (f, names) = (f.clone(), names.clone());
        group.bench_function(BenchmarkId::new(collection, "hot/1t"), |b| {
            b.iter_custom(|iters| {
                let (f, names) = (f.clone(), names.clone());
                run_threads(1, iters, move |_, _| read(&f, collection, HOT, &names))
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = hot_reads, floor_reads, coarse_clock_reads
}
criterion_main!(benches);
