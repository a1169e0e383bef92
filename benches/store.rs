//! The relay store per operation, side by side with what a relay engineer
//! would otherwise use, in the same criterion groups:
//!
//! - `store`: `relaystore::Store` (leases with tenants, tombstones,
//!   fences, versions, quotas, timing wheel);
//! - `ttl_map`: the engine alone (`TtlMap`);
//! - `mutex_heap`: a `Mutex<HashMap>` plus a `BinaryHeap` with lazy deletion;
//! - `moka`: `moka::sync::Cache` with per-entry expiry;
//! - `dashmap_cas`: a raw `DashMap` get plus an atomic CAS on the deadline,
//!   the floor any sharded design pays (`dashmap_insert` and
//!   `dashmap_removes` for the creating and revoking groups);
//! - `papaya_cas`: a papaya map (reads write nothing shared) get plus the
//!   same CAS, in the heartbeat group;
//! - `delay_queue`: tokio-util's `DelayQueue`, in the expiry group.
//!
//! Groups: `lease_renew`, `lease_get`, `lease_grant`, `listing_publish`,
//! `join_begin`, `join_bind`, `join_consume`, `join_hot` (every thread
//! joining one listing: begin and cancel), `lease_revoke` (0, 4 and 16
//! children, cascade against the same removals one by one), `idle_tick`,
//! `quotas` (per-tenant quotas on against off), `store_expiry` and
//! `tenant_revoke` (a tenant of 16 leases among `n` others').
//!
//! Every implementation reads the clock once per operation (a renewal
//! cannot avoid it), and the same kind, the store's `SystemClock` (moka
//! reads its own), so the comparison isolates the bookkeeping. Sizes are
//! live records (10k, 1M); threads are 1 and 2 (`Barrier` + `iter_custom`).
//! How and why the groups measure as they do: docs/adr/0012.

#[path = "support/mod.rs"]
mod support;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use dashmap::DashMap;
use moka::sync::Cache;
use relaystore::time::{Clock, SystemClock};
use relaystore::Name;
use relaystore::{
    LeaseId, RelayEngine, Store, StoreConfig, TenantId, TenantQuota, TtlConfig, TtlMap,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use support::{delay_queue_drain, run_threads, scaled, TICK_MS, WINDOW_MS};

/// A 16-byte holder id, as the memory target assumes.
const HOLDER: &str = "host-0123456789a";
const SIZES: [u64; 2] = [10_000, 1_000_000];
const THREADS: [usize; 2] = [1, 2];
const TTL: Duration = Duration::from_secs(600);
const TENANTS: u64 = 16;

/// A cheap, well-spread index for operation `i` of thread `t`.
fn pick(t: usize, i: u64, n: u64) -> u64 {
    let mut z = (i ^ ((t as u64) << 48)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= z >> 29;
    z % n
}

/// [`pick`] within thread `t`'s own share of the `n` keys, as when a relay
/// routes each session to one worker: no record is touched by two threads.
fn pick_affine(t: usize, i: u64, n: u64, threads: usize) -> u64 {
    let share = n / threads as u64;
    t as u64 * share + pick(t, i, share)
}

/// Ceilings well above the fixture, since the creating benches add
/// millions of records over a run. Consumed join tokens are remembered for
/// one second past their (one-second) deadline rather than a minute, so the
/// driver expires them while the join benches run, as in production,
/// instead of in a burst during whatever bench comes a minute later.
fn store_config(n: u64) -> StoreConfig {
    let n = n + 2_000_000;
    StoreConfig::default()
        .replay_grace(Duration::from_secs(1))
        .leases_max(n * 4)
        .listings_max(n * 4)
        .attempts_max(n * 4)
        .replay_max(n * 8)
        .presence_max(n * 4)
        .tombstones_max(n * 4)
        .tenant(
            TenantQuota::default()
                .leases_max(n * 4)
                .listings_max(n * 4)
                .attempts_max(n * 4)
                .replay_max(n * 8)
                .presence_max(n * 4),
        )
}

struct Fixture {
    store: Store,
    /// The store's expiry driver, as in production (joins fail closed
    /// without one).
    _driver: relaystore::ExpiryDriver,
    /// The fixture's leases by index, computed rather than looked up (see
    /// [`Leases`]).
    leases: Leases,
    ttl_map: Arc<TtlMap<u64, [u8; 16]>>,
    mutex_heap: Arc<MutexHeap>,
    moka: Cache<u64, Held>,
    dashmap: Arc<DashMap<u64, AtomicU64, ahash::RandomState>>,
    slots: Arc<[Slot]>,
    /// What the floors and baselines read the time from: the store's kind
    /// of clock, so that every column pays the same for it.
    clock: Arc<SystemClock>,
}

/// The floor of a record addressed by its id rather than hashed: one
/// 64-byte slot per record, found by index, its generation checked and its
/// state word swapped without any lock. What a slab of leases could reach.
#[repr(align(64))]
struct Slot {
    state: AtomicU64,
    generation: AtomicU64,
}

const SLOT_GENERATION: u64 = 1;

impl Slot {
    /// A renewal: the state first, then the generation (a reused slot
    /// changes its generation before its state), then the swap.
    fn renew(&self, now_ms: u64) -> bool {
        let current = self.state.load(Ordering::Acquire);
        if self.generation.load(Ordering::Acquire) != SLOT_GENERATION || current <= now_ms {
            return false;
        }
        self.state
            .compare_exchange(
                current,
                now_ms + TTL.as_millis() as u64,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    fn get(&self, now_ms: u64) -> bool {
        let current = self.state.load(Ordering::Acquire);
        self.generation.load(Ordering::Acquire) == SLOT_GENERATION && current > now_ms
    }
}

type Deadlines = HashMap<u64, (u64, [u8; 16])>;
type LazyHeap = BinaryHeap<Reverse<(u64, u64)>>;

/// The hand-written baseline: one lock around a map and a lazy heap.
struct MutexHeap {
    inner: Mutex<(Deadlines, LazyHeap)>,
}

impl MutexHeap {
    fn renew(&self, key: u64, now_ms: u64) -> bool {
        let mut guard = self.inner.lock().unwrap();
        let (map, heap) = &mut *guard;
        match map.get_mut(&key) {
            Some(entry) if entry.0 > now_ms => {
                entry.0 = now_ms + TTL.as_millis() as u64;
                heap.push(Reverse((entry.0, key)));
                true
            }
            _ => false,
        }
    }

    fn insert(&self, key: u64, now_ms: u64) {
        let mut guard = self.inner.lock().unwrap();
        let (map, heap) = &mut *guard;
        let deadline = now_ms + TTL.as_millis() as u64;
        map.insert(key, (deadline, [7; 16]));
        heap.push(Reverse((deadline, key)));
    }

    /// Removal leaves the heap entry behind, as lazy deletion does.
    fn remove(&self, key: u64) {
        self.inner.lock().unwrap().0.remove(&key);
    }

    fn get(&self, key: u64, now_ms: u64) -> Option<[u8; 16]> {
        let guard = self.inner.lock().unwrap();
        guard.0.get(&key).filter(|e| e.0 > now_ms).map(|e| e.1)
    }
}

#[derive(Clone)]
struct Held {
    holder: [u8; 16],
}

struct PerEntry;

impl moka::Expiry<u64, Held> for PerEntry {
    fn expire_after_create(&self, _: &u64, _: &Held, _: std::time::Instant) -> Option<Duration> {
        Some(TTL)
    }
    fn expire_after_update(
        &self,
        _: &u64,
        _: &Held,
        _: std::time::Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(TTL)
    }
}

/// Lease `k` of the fixture, computed from its index the way every
/// baseline computes its key: a table of ids would add a random read of
/// its own (at 10^6 a cache miss) to the store's side only. The fixture
/// checks that the ids it was granted are consecutive.
#[derive(Clone, Copy)]
struct Leases {
    first: u128,
}

impl Leases {
    fn get(self, k: u64) -> (TenantId, LeaseId) {
        (
            TenantId(k % TENANTS),
            LeaseId::from_bits(self.first + u128::from(k)),
        )
    }
}

fn fixture(n: u64) -> Fixture {
    let clock = Arc::new(SystemClock::new());
    let store = Store::new(store_config(n), clock.clone()).unwrap();
    let granted: Vec<_> = (0..n)
        .map(|i| {
            let t = TenantId(i % TENANTS);
            store.grant(t, HOLDER, TTL, None).unwrap().id
        })
        .collect();
    let leases = Leases {
        first: granted[0].to_bits(),
    };
    for (k, id) in granted.into_iter().enumerate() {
        assert_eq!(
            leases.get(k as u64).1,
            id,
            "the fixture's ids are consecutive"
        );
    }
    let ttl_map = Arc::new(
        TtlMap::new(
            TtlConfig {
                entries_max: n * 2,
                ..TtlConfig::default()
            },
            clock.clone(),
        )
        .unwrap(),
    );
    let mut map = HashMap::with_capacity(n as usize);
    let mut heap = BinaryHeap::with_capacity(n as usize);
    let dashmap = DashMap::with_capacity_and_hasher(n as usize, ahash::RandomState::new());
    let moka = Cache::builder()
        .max_capacity(n * 2)
        .expire_after(PerEntry)
        .build();
    for k in 0..n {
        ttl_map.insert(k, [7; 16], TTL).unwrap();
        let deadline = TTL.as_millis() as u64;
        map.insert(k, (deadline, [7; 16]));
        heap.push(Reverse((deadline, k)));
        dashmap.insert(k, AtomicU64::new(deadline));
        moka.insert(k, Held { holder: [7; 16] });
    }
    let driver =
        relaystore::ExpiryDriver::spawn(Arc::new(store.clone()), Duration::from_millis(10))
            .unwrap();
    Fixture {
        _driver: driver,
        store,
        leases,
        ttl_map,
        mutex_heap: Arc::new(MutexHeap {
            inner: Mutex::new((map, heap)),
        }),
        moka,
        dashmap: Arc::new(dashmap),
        slots: (0..n)
            .map(|_| Slot {
                state: AtomicU64::new(TTL.as_millis() as u64),
                generation: AtomicU64::new(SLOT_GENERATION),
            })
            .collect(),
        clock,
    }
}

/// The output of a future that completes in its first poll (the in-memory
/// engine's futures all do).
fn ready<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => unreachable!("in-memory futures are ready at once"),
    }
}

/// Lease renewal (the hot path: heartbeats and refreshes).
fn renew_and_get(c: &mut Criterion) {
    for n in SIZES {
        let f = fixture(n);
        for (op, name) in [(0, "lease_renew"), (1, "lease_get")] {
            let mut group = c.benchmark_group(format!("{name}/{n}"));
            for threads in THREADS {
                group.throughput(Throughput::Elements(threads as u64));
                let id = |what: &str| BenchmarkId::new(what, format!("{threads}t"));
                let (store, leases) = (f.store.clone(), f.leases);
                group.bench_function(id("store"), |b| {
                    b.iter_custom(|iters| {
                        let store = store.clone();
                        run_threads(threads, iters, move |t, i| {
                            let (tenant, lease) = leases.get(pick(t, i, n));
                            if op == 0 {
                                black_box(store.renew(tenant, lease, TTL).unwrap());
                            } else {
                                black_box(store.get_lease(tenant, lease).unwrap());
                            }
                        })
                    })
                });
                // The same, each thread on its own share of the leases.
                let store = f.store.clone();
                group.bench_function(id("store_affine"), |b| {
                    b.iter_custom(|iters| {
                        let store = store.clone();
                        run_threads(threads, iters, move |t, i| {
                            let (tenant, lease) = leases.get(pick_affine(t, i, n, threads));
                            if op == 0 {
                                black_box(store.renew(tenant, lease, TTL).unwrap());
                            } else {
                                black_box(store.get_lease(tenant, lease).unwrap());
                            }
                        })
                    })
                });
                // The same operation through the engine contract: the
                // future is polled once, as any executor would.
                let engine = f.store.engine();
                group.bench_function(id("store_engine"), |b| {
                    b.iter_custom(|iters| {
                        let engine = engine.clone();
                        run_threads(threads, iters, move |t, i| {
                            let (tenant, lease) = leases.get(pick(t, i, n));
                            if op == 0 {
                                black_box(
                                    ready(RelayEngine::renew(&engine, tenant, lease, TTL)).unwrap(),
                                );
                            } else {
                                black_box(
                                    ready(RelayEngine::get_lease(&engine, tenant, lease)).unwrap(),
                                );
                            }
                        })
                    })
                });
                let map = f.ttl_map.clone();
                group.bench_function(id("ttl_map"), |b| {
                    b.iter_custom(|iters| {
                        let map = map.clone();
                        run_threads(threads, iters, move |t, i| {
                            let k = pick(t, i, n);
                            if op == 0 {
                                black_box(map.renew(&k, TTL).unwrap());
                            } else {
                                black_box(map.get(&k).unwrap());
                            }
                        })
                    })
                });
                let (mh, clock) = (f.mutex_heap.clone(), f.clock.clone());
                group.bench_function(id("mutex_heap"), |b| {
                    b.iter_custom(|iters| {
                        let (mh, clock) = (mh.clone(), clock.clone());
                        run_threads(threads, iters, move |t, i| {
                            let now = clock.now().as_millis();
                            let k = pick(t, i, n);
                            if op == 0 {
                                assert!(mh.renew(k, now));
                            } else {
                                black_box(mh.get(k, now).unwrap());
                            }
                        })
                    })
                });
                let cache = f.moka.clone();
                group.bench_function(id("moka"), |b| {
                    b.iter_custom(|iters| {
                        let cache = cache.clone();
                        run_threads(threads, iters, move |t, i| {
                            let k = pick(t, i, n);
                            if op == 0 {
                                cache.insert(k, Held { holder: [7; 16] });
                            } else {
                                black_box(cache.get(&k).unwrap().holder);
                            }
                        })
                    })
                });
                let (dm, clock) = (f.dashmap.clone(), f.clock.clone());
                group.bench_function(id("dashmap_cas"), |b| {
                    b.iter_custom(|iters| {
                        let (dm, clock) = (dm.clone(), clock.clone());
                        run_threads(threads, iters, move |t, i| {
                            let now = clock.now().as_millis();
                            let k = pick(t, i, n);
                            let entry = dm.get(&k).unwrap();
                            let current = entry.load(Ordering::Acquire);
                            if op == 0 {
                                let _ = entry.compare_exchange(
                                    current,
                                    now + TTL.as_millis() as u64,
                                    Ordering::AcqRel,
                                    Ordering::Acquire,
                                );
                            } else {
                                black_box(current > now);
                            }
                        })
                    })
                });
                // The floor without any lock: bare, inside an epoch pin
                // (what delaying a slot's reuse past every reader costs),
                // and bare with each thread on its own share of the slots.
                for (what, pinned, affine) in [
                    ("slot_cas", false, false),
                    ("slot_cas_pinned", true, false),
                    ("slot_cas_affine", false, true),
                ] {
                    let (slots, clock) = (f.slots.clone(), f.clock.clone());
                    group.bench_function(id(what), |b| {
                        b.iter_custom(|iters| {
                            let (slots, clock) = (slots.clone(), clock.clone());
                            run_threads(threads, iters, move |t, i| {
                                let now = clock.now().as_millis();
                                let k = if affine {
                                    pick_affine(t, i, n, threads)
                                } else {
                                    pick(t, i, n)
                                };
                                let slot = &slots[k as usize];
                                let _guard = pinned.then(crossbeam_epoch::pin);
                                if op == 0 {
                                    black_box(slot.renew(now));
                                } else {
                                    assert!(slot.get(now));
                                }
                            })
                        })
                    });
                }
            }
            group.finish();
        }
    }
}

/// Runs `op` on `threads` threads for `iters` operations each, in chunks
/// of at most `chunk` per thread: `setup(len)` prepares `len` items
/// untimed, the threads run `op(&items, index)` timed, and
/// `teardown(items)` removes what the chunk created, untimed. So the live
/// population stays near the fixture's size however many operations
/// criterion asks for.
fn chunked<S: Send + Sync + 'static>(
    threads: usize,
    iters: u64,
    chunk: u64,
    mut setup: impl FnMut(u64) -> S,
    op: impl Fn(&S, u64) + Send + Sync + Clone + 'static,
    mut teardown: impl FnMut(S),
) -> Duration {
    let (mut total, mut done) = (Duration::ZERO, 0);
    while done < iters {
        let k = chunk.min(iters - done);
        let items = Arc::new(setup(k * threads as u64));
        let (shared, op) = (items.clone(), op.clone());
        total += run_threads(threads, k, move |t, i| op(&shared, t as u64 * k + i));
        match Arc::try_unwrap(items) {
            Ok(items) => teardown(items),
            Err(_) => unreachable!("every thread has finished"),
        }
        done += k;
    }
    total
}

fn slots<T>(len: u64) -> Vec<OnceLock<T>> {
    (0..len).map(|_| OnceLock::new()).collect()
}

const JOIN_TTL: Duration = Duration::from_secs(1);
const LISTINGS_PER_LEASE: u64 = 16;
const ATTEMPTS_PER_LISTING: u64 = 64;

/// `len` leases' worth of listings for joins: one listing per
/// `ATTEMPTS_PER_LISTING` attempts, under leases that `teardown` revokes.
fn lobbies(store: &Store, t: TenantId, tag: &str, len: u64) -> (Vec<LeaseId>, Vec<String>) {
    let count = len.div_ceil(ATTEMPTS_PER_LISTING);
    let leases: Vec<_> = (0..count.div_ceil(LISTINGS_PER_LEASE))
        .map(|_| store.grant(t, HOLDER, TTL, None).unwrap().id)
        .collect();
    let keys: Vec<String> = (0..count)
        .map(|i| format!("{tag}-{}-{i}", leases[0].to_bits()))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        let lease = leases[i / LISTINGS_PER_LEASE as usize];
        store.publish(t, lease, key, b"mode=ffa", None).unwrap();
    }
    (leases, keys)
}

fn revoke_all(store: &Store, t: TenantId, leases: &[LeaseId]) {
    for &lease in leases {
        store.revoke(t, lease).unwrap();
    }
}

/// The creating operations and the transitions of a join, at 10k and 1M
/// live leases, 1 and 2 threads. Grant has the baselines' inserts beside
/// it; the relay-specific operations have no counterpart in them.
fn create_ops(c: &mut Criterion) {
    for n in SIZES {
        let f = fixture(n);
        let chunk = (n / 10).min(10_000);
        let store = &f.store;
        let addr = SocketAddr::from(([203, 0, 113, 1], 4000));

        let mut group = c.benchmark_group(format!("lease_grant/{n}"));
        for threads in THREADS {
            group.throughput(Throughput::Elements(threads as u64));
            let id = |what: &str| BenchmarkId::new(what, format!("{threads}t"));
            let t = TenantId(99);
            group.bench_function(id("store"), |b| {
                b.iter_custom(|iters| {
                    let s = store.clone();
                    chunked(
                        threads,
                        iters,
                        chunk,
                        slots::<LeaseId>,
                        move |ids, i| {
                            let lease = s.grant(t, HOLDER, TTL, None).unwrap().id;
                            ids[i as usize].set(lease).unwrap();
                        },
                        |ids| {
                            let ids = ids.into_iter().map(|l| l.into_inner().unwrap());
                            revoke_all(store, t, &ids.collect::<Vec<_>>());
                        },
                    )
                })
            });
            // Fresh keys above the fixture's, one range per chunk.
            let next = AtomicU64::new(1 << 40);
            let fresh = |len: u64| next.fetch_add(len, Ordering::Relaxed);
            let (mh, clock) = (f.mutex_heap.clone(), f.clock.clone());
            group.bench_function(id("mutex_heap"), |b| {
                b.iter_custom(|iters| {
                    let (mh2, clock) = (mh.clone(), clock.clone());
                    chunked(
                        threads,
                        iters,
                        chunk,
                        |len| (fresh(len), len),
                        move |&(base, _), i| {
                            mh2.insert(base + i, clock.now().as_millis());
                        },
                        |(base, len)| (base..base + len).for_each(|k| mh.remove(k)),
                    )
                })
            });
            let cache = f.moka.clone();
            group.bench_function(id("moka"), |b| {
                b.iter_custom(|iters| {
                    let c2 = cache.clone();
                    chunked(
                        threads,
                        iters,
                        chunk,
                        |len| (fresh(len), len),
                        move |&(base, _), i| c2.insert(base + i, Held { holder: [7; 16] }),
                        |(base, len)| (base..base + len).for_each(|k| cache.invalidate(&k)),
                    )
                })
            });
            let dm = f.dashmap.clone();
            group.bench_function(id("dashmap_insert"), |b| {
                b.iter_custom(|iters| {
                    let dm2 = dm.clone();
                    chunked(
                        threads,
                        iters,
                        chunk,
                        |len| (fresh(len), len),
                        move |&(base, _), i| {
                            dm2.insert(base + i, AtomicU64::new(TTL.as_millis() as u64));
                        },
                        |(base, len)| {
                            (base..base + len).for_each(|k| {
                                dm.remove(&k);
                            })
                        },
                    )
                })
            });
        }
        group.finish();

        let mut group = c.benchmark_group(format!("listing_publish/{n}"));
        for threads in THREADS {
            group.throughput(Throughput::Elements(threads as u64));
            let t = TenantId(98);
            group.bench_function(BenchmarkId::new("store", format!("{threads}t")), |b| {
                b.iter_custom(|iters| {
                    let s = store.clone();
                    chunked(
                        threads,
                        iters,
                        chunk,
                        |len| {
                            let leases: Vec<_> = (0..len.div_ceil(LISTINGS_PER_LEASE))
                                .map(|_| store.grant(t, HOLDER, TTL, None).unwrap().id)
                                .collect();
                            let tag = leases[0].to_bits();
                            let keys: Vec<_> = (0..len).map(|i| format!("p-{tag}-{i}")).collect();
                            (leases, keys)
                        },
                        move |(leases, keys), i| {
                            let lease = leases[(i / LISTINGS_PER_LEASE) as usize];
                            let key = &keys[i as usize];
                            s.publish(t, lease, key, b"mode=ffa", None).unwrap();
                        },
                        |(leases, _)| revoke_all(store, t, &leases),
                    )
                })
            });
        }
        group.finish();

        // The three steps of a join, each timed alone.
        for (step, name) in [(0, "join_begin"), (1, "join_bind"), (2, "join_consume")] {
            let mut group = c.benchmark_group(format!("{name}/{n}"));
            for threads in THREADS {
                group.throughput(Throughput::Elements(threads as u64));
                let t = TenantId(97 - step);
                group.bench_function(BenchmarkId::new("store", format!("{threads}t")), |b| {
                    b.iter_custom(|iters| {
                        let s = store.clone();
                        chunked(
                            threads,
                            iters,
                            chunk,
                            |len| {
                                let (leases, keys) = lobbies(store, t, name, len);
                                let tickets: Vec<_> = (0..len)
                                    .filter(|_| step > 0)
                                    .map(|i| {
                                        let key = &keys[(i / ATTEMPTS_PER_LISTING) as usize];
                                        let tk = store.begin_join(
                                            t,
                                            key,
                                            "client-0123456",
                                            JOIN_TTL,
                                            None,
                                        );
                                        let tk = tk.unwrap();
                                        if step > 1 {
                                            store
                                                .bind_endpoint(t, tk.attempt, &tk.token, addr)
                                                .unwrap();
                                        }
                                        tk
                                    })
                                    .collect();
                                (leases, keys, tickets)
                            },
                            move |(_, keys, tickets), i| match step {
                                0 => {
                                    let key = &keys[(i / ATTEMPTS_PER_LISTING) as usize];
                                    let tk = s.begin_join(t, key, "client-0123456", JOIN_TTL, None);
                                    black_box(tk.unwrap());
                                }
                                1 => {
                                    let tk = &tickets[i as usize];
                                    black_box(
                                        s.bind_endpoint(t, tk.attempt, &tk.token, addr).unwrap(),
                                    );
                                }
                                _ => {
                                    black_box(
                                        s.consume(t, &tickets[i as usize].token, None).unwrap(),
                                    );
                                }
                            },
                            |(leases, _, _)| revoke_all(store, t, &leases),
                        )
                    })
                });
            }
            group.finish();
        }
        // One listing every thread joins at once (a lobby every client is
        // matched into): each operation begins an attempt and cancels it,
        // so the listing stays under its cap of attempts.
        if n == SIZES[0] {
            let mut group = c.benchmark_group(format!("join_hot/{n}"));
            for threads in THREADS {
                group.throughput(Throughput::Elements(threads as u64));
                let t = TenantId(93);
                group.bench_function(BenchmarkId::new("store", format!("{threads}t")), |b| {
                    b.iter_custom(|iters| {
                        let s = store.clone();
                        chunked(
                            threads,
                            iters,
                            chunk,
                            |_| lobbies(store, t, "join_hot", 1),
                            move |(_, keys), _| {
                                let tk =
                                    s.begin_join(t, &keys[0], "client-0123456", JOIN_TTL, None);
                                s.cancel_join(t, tk.unwrap().attempt).unwrap();
                            },
                            |(leases, _)| revoke_all(store, t, &leases),
                        )
                    })
                });
            }
            group.finish();
        }
        // Let the driver expire the joins' last replay records before the
        // next groups are timed (it had inflated the first of them 5x).
        std::thread::sleep(JOIN_TTL * 3);

        // Revoking a lease with N children (half listings, half presence):
        // the cascade, the same children removed one by one through the
        // store's own calls, and N + 1 bare map removes.
        for children in [0u64, 4, 16] {
            let mut group = c.benchmark_group(format!("lease_revoke/{n}/{children}_children"));
            for threads in THREADS {
                group.throughput(Throughput::Elements((children + 1) * threads as u64));
                let id = |what: &str| BenchmarkId::new(what, format!("{threads}t"));
                let t = TenantId(90);
                let family = |len: u64| -> Vec<(LeaseId, Vec<String>)> {
                    (0..len)
                        .map(|_| {
                            let lease = store.grant(t, HOLDER, TTL, None).unwrap().id;
                            let tag = lease.to_bits();
                            let keys: Vec<_> = (0..children)
                                .map(|c| {
                                    let key = format!("r-{tag}-{c}");
                                    if c % 2 == 0 {
                                        store.publish(t, lease, &key, b"", None).unwrap();
                                    } else {
                                        store.heartbeat(t, &key, TTL, None, Some(lease)).unwrap();
                                    }
                                    key
                                })
                                .collect();
                            (lease, keys)
                        })
                        .collect()
                };
                group.bench_function(id("store_cascade"), |b| {
                    b.iter_custom(|iters| {
                        let s = store.clone();
                        chunked(
                            threads,
                            iters,
                            chunk,
                            family,
                            move |leases, i| s.revoke(t, leases[i as usize].0).unwrap(),
                            drop,
                        )
                    })
                });
                group.bench_function(id("store_one_by_one"), |b| {
                    b.iter_custom(|iters| {
                        let s = store.clone();
                        chunked(
                            threads,
                            iters,
                            chunk,
                            family,
                            move |leases, i| {
                                let (lease, keys) = &leases[i as usize];
                                for (c, key) in keys.iter().enumerate() {
                                    if c % 2 == 0 {
                                        s.revoke_listing(t, key).unwrap();
                                    } else {
                                        s.leave(t, key).unwrap();
                                    }
                                }
                                s.revoke(t, *lease).unwrap();
                            },
                            drop,
                        )
                    })
                });
                let next = AtomicU64::new(1 << 41);
                let dm = f.dashmap.clone();
                group.bench_function(id("dashmap_removes"), |b| {
                    b.iter_custom(|iters| {
                        let dm2 = dm.clone();
                        chunked(
                            threads,
                            iters,
                            chunk,
                            |len| {
                                let base = next.fetch_add(len * (children + 1), Ordering::Relaxed);
                                for k in base..base + len * (children + 1) {
                                    dm.insert(k, AtomicU64::new(0));
                                }
                                base
                            },
                            move |&base, i| {
                                let first = base + i * (children + 1);
                                for k in first..=first + children {
                                    black_box(dm2.remove(&k));
                                }
                            },
                            drop,
                        )
                    })
                });
            }
            group.finish();
        }
    }
}

/// One driver tick with nothing due: what the expiry driver costs the
/// store every tick while all leases are live (600 s TTLs).
fn idle_tick(c: &mut Criterion) {
    let mut group = c.benchmark_group("idle_tick");
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        let f = fixture(n);
        let store = f.store.clone();
        group.bench_function(BenchmarkId::new("store_sweep", n), |b| {
            b.iter(|| black_box(store.sweep()))
        });
        let map = f.ttl_map.clone();
        group.bench_function(BenchmarkId::new("ttl_map_sweep", n), |b| {
            b.iter(|| black_box(map.sweep_into(&mut Vec::new())))
        });
    }
    group.finish();
}

/// Admission cost: the same create-and-remove cycles with per-tenant
/// quotas on (the default policy) and switched off
/// ([`TenantQuota::unlimited`]); store-wide ceilings count in both. With 2
/// threads both work in one tenant, so its counters are shared.
fn quotas(c: &mut Criterion) {
    // A manual clock that stands still while timed: the tombstones and
    // replay records the cycles leave are swept between samples, untimed,
    // so no driver thread competes for the two cores.
    let clock = Arc::new(relaystore::time::ManualClock::new());
    let quota_store = |tenant: TenantQuota| {
        let config = store_config(0)
            .tombstone_ttl(Duration::from_secs(1))
            .tombstones_max(50_000_000)
            .replay_max(50_000_000)
            .replay_grace(Duration::from_millis(100))
            .tenant(tenant);
        let store = Store::new(config, clock.clone()).unwrap();
        // Outlives every settle below (11 s of clock each).
        let day = Duration::from_secs(20 * 3600);
        let lobby = store.grant(TenantId(1), "h", day, None).unwrap().id;
        store
            .publish(TenantId(1), lobby, "lobby", b"", None)
            .unwrap();
        store
    };
    let on = quota_store(store_config(0).tenant);
    let off = quota_store(TenantQuota::unlimited());
    let settle = |store: &Store| {
        clock.advance(Duration::from_secs(11));
        while store.sweep() > 0 {}
    };
    let addr = SocketAddr::from(([203, 0, 113, 1], 4000));
    for threads in THREADS {
        let mut group = c.benchmark_group(format!("quotas/{threads}t"));
        for (name, store) in [("on", &on), ("off", &off)] {
            group.throughput(Throughput::Elements(2 * threads as u64));
            group.bench_function(BenchmarkId::new("grant_revoke", name), |b| {
                b.iter_custom(|iters| {
                    settle(store);
                    let store = store.clone();
                    run_threads(threads, iters, move |_, _| {
                        let g = store.grant(TenantId(1), HOLDER, TTL, None);
                        store.revoke(TenantId(1), g.unwrap().id).unwrap();
                    })
                })
            });
            group.throughput(Throughput::Elements(3 * threads as u64));
            group.bench_function(BenchmarkId::new("join_bind_consume", name), |b| {
                b.iter_custom(|iters| {
                    settle(store);
                    let store = store.clone();
                    run_threads(threads, iters, move |_, _| {
                        let t = store
                            .begin_join(TenantId(1), "lobby", "c", Duration::from_secs(10), None)
                            .unwrap();
                        store
                            .bind_endpoint(TenantId(1), t.attempt, &t.token, addr)
                            .unwrap();
                        black_box(store.consume(TenantId(1), &t.token, None).unwrap());
                    })
                })
            });
        }
        group.finish();
    }
}

/// Expiry in the relay store against tokio-util's `DelayQueue`: `n` leases
/// due over a minute, drained one 10 ms driver tick at a time; time per
/// expired record. The store's sweep removes each lease from its map,
/// releases its quotas, frees its tenant index entry and publishes its
/// removal; the queue only hands back its key.
fn store_expiry(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_expiry");
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        group.bench_function(BenchmarkId::new("store_sweep", n), |b| {
            b.iter_custom(|iters| {
                scaled(iters, n, || {
                    let clock = Arc::new(relaystore::time::ManualClock::new());
                    let store = Store::new(store_config(n), clock.clone()).unwrap();
                    for i in 0..n {
                        let ttl = Duration::from_millis(100 + pick(0, i, WINDOW_MS));
                        store.grant(TenantId(i % TENANTS), "h", ttl, None).unwrap();
                    }
                    let (start, mut expired) = (Instant::now(), 0);
                    while expired < n as usize {
                        clock.advance(Duration::from_millis(TICK_MS));
                        expired += black_box(store.sweep());
                    }
                    start.elapsed()
                })
            })
        });
        group.bench_function(BenchmarkId::new("delay_queue", n), |b| {
            b.iter_custom(|iters| {
                scaled(iters, n, || {
                    delay_queue_drain(n, |i| 100 + pick(0, i, WINDOW_MS))
                })
            })
        });
    }
    group.finish();
}

/// What each event subscriber costs the operations that remove records:
/// grant + revoke of a lease (one removal event each) with 0, 1, 4 and 16
/// subscriptions to every collection. The subscribers are drained between
/// chunks of 1,000 cycles, untimed, so no inbox overflows and no reader
/// thread competes for the cores; the cost per subscriber is the
/// difference to 0 subscribers, divided by their number.
fn subscribers(c: &mut Criterion) {
    const CHUNK: u64 = 1_000;
    let mut group = c.benchmark_group("event_subscribers");
    group.throughput(Throughput::Elements(2));
    for subs in [0usize, 1, 4, 16] {
        let clock = Arc::new(relaystore::time::ManualClock::new());
        let config = store_config(0)
            .tombstone_ttl(Duration::from_secs(1))
            .tombstones_max(50_000_000)
            .subscribers_max(16);
        let store = Store::new(config, clock.clone()).unwrap();
        let inboxes: Vec<_> = (0..subs).map(|_| store.subscribe().unwrap()).collect();
        let settle = || {
            clock.advance(Duration::from_secs(2));
            while store.sweep() > 0 {}
            for inbox in &inboxes {
                black_box(inbox.try_recv_all());
            }
        };
        group.bench_function(BenchmarkId::new("grant_revoke", subs), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let chunk = left.min(CHUNK);
                    settle();
                    let start = Instant::now();
                    for _ in 0..chunk {
                        let g = store.grant(TenantId(1), HOLDER, TTL, None).unwrap();
                        store.revoke(TenantId(1), g.id).unwrap();
                    }
                    timed += start.elapsed();
                    left -= chunk;
                }
                timed
            })
        });
    }
    group.finish();
}

/// The floors of a named record's heartbeat (ADR 0035 §2): the record
/// found by `(tenant, name)`, as the presence table keys it, then one CAS
/// of its deadline word. dashmap's lookup writes its shard's lock word;
/// papaya's writes nothing another thread reads.
struct NamedFloors {
    dashmap: DashMap<(u64, Name), AtomicU64, ahash::RandomState>,
    papaya: papaya::HashMap<(u64, Name), AtomicU64, ahash::RandomState>,
    clock: SystemClock,
}

impl NamedFloors {
    fn new(members: &[(TenantId, String)]) -> Self {
        let deadline = || AtomicU64::new(TTL.as_millis() as u64);
        let floors = NamedFloors {
            dashmap: DashMap::with_capacity_and_hasher(members.len(), ahash::RandomState::new()),
            papaya: papaya::HashMap::builder()
                .capacity(members.len())
                .hasher(ahash::RandomState::new())
                .build(),
            clock: SystemClock::new(),
        };
        let papaya = floors.papaya.pin();
        for (tenant, member) in members {
            let key = (tenant.0, Name::new(member));
            floors.dashmap.insert(key.clone(), deadline());
            papaya.insert(key, deadline());
        }
        drop(papaya);
        floors
    }

    /// One heartbeat through the dashmap (`which` 0) or papaya floor.
    fn beat(&self, which: usize, tenant: TenantId, member: &str) -> bool {
        let now = self.clock.now().as_millis();
        let key = (tenant.0, Name::new(member));
        let swap = |word: &AtomicU64| {
            let current = word.load(Ordering::Acquire);
            current > now
                && word
                    .compare_exchange(
                        current,
                        now + TTL.as_millis() as u64,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
        };
        if which == 0 {
            swap(&self.dashmap.get(&key).expect("every member is held"))
        } else {
            swap(self.papaya.pin().get(&key).expect("every member is held"))
        }
    }
}

/// Presence heartbeats (the hottest operation in the relay mix): refreshes
/// of `n` existing members' records, without new attributes, on 1 and 2
/// threads, with members spread over both threads and with each thread on
/// its own share: the baseline for making them cheaper, beside the
/// floors of [`NamedFloors`]. At 10^4 members a floor's map (about half
/// a MiB) fits in a core's 1 MiB of L2 and the store's records (about
/// 3 MiB at some 280 heap bytes each) in the shared 32 MiB L3; at 10^5
/// (about the relay mix's population) neither does, which is where a
/// map's layout shows (ADR 0053).
fn heartbeats(c: &mut Criterion) {
    for n in [10_000u64, 100_000] {
        let store = Store::new(store_config(n), Arc::new(SystemClock::new())).unwrap();
        let members: Arc<Vec<(TenantId, String)>> = Arc::new(
            (0..n)
                .map(|i| (TenantId(i % TENANTS), format!("member-{i:010}")))
                .collect(),
        );
        for (t, m) in members.iter() {
            store.heartbeat(*t, m, TTL, None, None).unwrap();
        }
        let floors = Arc::new(NamedFloors::new(&members));
        let mut group = c.benchmark_group(format!("presence_heartbeat/{n}"));
        for threads in THREADS {
            group.throughput(Throughput::Elements(threads as u64));
            group.bench_function(BenchmarkId::new("store", format!("{threads}t")), |b| {
                b.iter_custom(|iters| {
                    let (store, members) = (store.clone(), members.clone());
                    run_threads(threads, iters, move |t, i| {
                        let (tenant, member) = &members[pick(t, i, n) as usize];
                        black_box(store.heartbeat(*tenant, member, TTL, None, None).unwrap());
                    })
                })
            });
            // The floors a named record's heartbeat could reach (ADR 0035 §2).
            for (which, name) in [(0, "dashmap_cas"), (1, "papaya_cas")] {
                group.bench_function(BenchmarkId::new(name, format!("{threads}t")), |b| {
                    b.iter_custom(|iters| {
                        let (floors, members) = (floors.clone(), members.clone());
                        run_threads(threads, iters, move |t, i| {
                            let (tenant, member) = &members[pick(t, i, n) as usize];
                            black_box(floors.beat(which, *tenant, member));
                        })
                    })
                });
            }
            // Each thread on its own share of the members.
            group.bench_function(
                BenchmarkId::new("store_affine", format!("{threads}t")),
                |b| {
                    b.iter_custom(|iters| {
                        let (store, members) = (store.clone(), members.clone());
                        run_threads(threads, iters, move |t, i| {
                            let (tenant, member) = &members[pick_affine(t, i, n, threads) as usize];
                            black_box(store.heartbeat(*tenant, member, TTL, None, None).unwrap());
                        })
                    })
                },
            );
        }
        group.finish();
    }
}

/// Revoking a tenant that holds 16 leases, in a store holding `n` leases
/// of other tenants. A tenant's leases are found in one pass over the
/// lease slab (ADR 0043), so this grows with `n`: the price of a grant and
/// a lease's removal taking no lock of their tenant's.
fn tenant_revoke(c: &mut Criterion) {
    const VICTIM_LEASES: u64 = 16;
    // Long enough to outlast every sample, with the clock moving 2 s per
    // iteration so that each iteration's tombstones are swept before the
    // next one.
    const LONG: Duration = Duration::from_secs(365 * 24 * 60 * 60);
    let mut group = c.benchmark_group("tenant_revoke");
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        let clock = Arc::new(relaystore::time::ManualClock::new());
        let config = store_config(n)
            .ttl_max(LONG)
            .tombstone_ttl(Duration::from_secs(1));
        let store = Store::new(config, clock.clone()).unwrap();
        for i in 0..n {
            store
                .grant(TenantId(i % TENANTS), HOLDER, LONG, None)
                .unwrap();
        }
        let victim = TenantId(TENANTS + 1);
        let name = format!("{VICTIM_LEASES}_leases/store");
        group.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter_batched(
                || {
                    clock.advance(Duration::from_secs(2));
                    store.sweep();
                    for _ in 0..VICTIM_LEASES {
                        store.grant(victim, HOLDER, LONG, None).unwrap();
                    }
                },
                |()| store.revoke_tenant(victim).unwrap(),
                BatchSize::PerIteration,
            )
        });
        assert_eq!(
            store.stats().leases as u64,
            n,
            "only the victim's leases went"
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::short_runs();
    targets = renew_and_get, create_ops, idle_tick, quotas, store_expiry, subscribers, heartbeats,
        tenant_revoke
}
criterion_main!(benches);
