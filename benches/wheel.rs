//! Timer structures side by side: insert, cancel and expire per operation
//! with 10k and 1M pending timers.
//!
//! In every group: the crate's hierarchical wheel, a `BinaryHeap` with lazy
//! deletion (what one would write by hand), and tokio-util's `DelayQueue`.
//! The expire group also has the full store path (`TtlMap::sweep`, wheel +
//! map removal) and one random `DashMap` remove, the per-record floor.

#[path = "support/mod.rs"]
mod support;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use relaystore::time::ManualClock;
use relaystore::wheel::{Fired, TimerHandle, Wheel};
use relaystore::{TtlConfig, TtlMap};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{delay_queue_drain, scaled, XorShift, SIZES, TICK_MS, WINDOW_MS};

/// A min-heap of `(due, id)` with lazy deletion: cancel marks the id dead and
/// the pop loop skips dead ids.
struct LazyHeap {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    dead: Vec<bool>,
}

impl LazyHeap {
    fn new() -> Self {
        LazyHeap {
            heap: BinaryHeap::new(),
            dead: Vec::new(),
        }
    }

    fn insert(&mut self, due: u64) -> u32 {
        let id = self.dead.len() as u32;
        self.dead.push(false);
        self.heap.push(Reverse((due, id)));
        id
    }

    fn cancel(&mut self, id: u32) {
        self.dead[id as usize] = true;
    }

    fn expire(&mut self, now: u64) -> usize {
        let mut n = 0;
        while let Some(&Reverse((due, id))) = self.heap.peek() {
            if due > now {
                break;
            }
            self.heap.pop();
            if !self.dead[id as usize] {
                n += 1;
            }
        }
        n
    }
}

fn wheel_with(n: usize, rng: &mut XorShift) -> (Wheel<u32>, Vec<TimerHandle>) {
    let mut wheel = Wheel::new(0);
    wheel.reserve(n);
    let handles = (0..n as u32)
        .map(|id| wheel.insert(id, 1 + rng.below(WINDOW_MS)))
        .collect();
    (wheel, handles)
}

fn heap_with(n: usize, rng: &mut XorShift) -> LazyHeap {
    let mut heap = LazyHeap::new();
    for _ in 0..n {
        heap.insert(1 + rng.below(WINDOW_MS));
    }
    heap
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime")
}

fn insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("timer_insert");
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        group.bench_with_input(BenchmarkId::new("wheel", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut rng = XorShift(0x5eed);
                let (mut wheel, _) = wheel_with(n, &mut rng);
                wheel.reserve(iters as usize);
                let start = Instant::now();
                for i in 0..iters {
                    black_box(wheel.insert(i as u32, 1 + rng.below(WINDOW_MS)));
                }
                start.elapsed()
            })
        });
        group.bench_with_input(BenchmarkId::new("lazy_heap", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut rng = XorShift(0x5eed);
                let mut heap = heap_with(n, &mut rng);
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(heap.insert(1 + rng.below(WINDOW_MS)));
                }
                start.elapsed()
            })
        });
        group.bench_with_input(BenchmarkId::new("delay_queue", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let rt = paused_runtime();
                rt.block_on(async {
                    let mut rng = XorShift(0x5eed);
                    let mut queue = tokio_util::time::DelayQueue::with_capacity(n);
                    for i in 0..n as u32 {
                        queue.insert(i, Duration::from_millis(1 + rng.below(WINDOW_MS)));
                    }
                    let start = Instant::now();
                    for i in 0..iters {
                        black_box(
                            queue.insert(i as u32, Duration::from_millis(1 + rng.below(WINDOW_MS))),
                        );
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

fn cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("timer_cancel");
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        group.bench_with_input(BenchmarkId::new("wheel", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut rng = XorShift(0x5eed);
                let (mut wheel, handles) = wheel_with(n + iters as usize, &mut rng);
                let start = Instant::now();
                for &h in handles.iter().step_by(1).take(iters as usize) {
                    black_box(wheel.cancel(h));
                }
                start.elapsed()
            })
        });
        group.bench_with_input(BenchmarkId::new("lazy_heap", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut rng = XorShift(0x5eed);
                let mut heap = heap_with(n + iters as usize, &mut rng);
                let start = Instant::now();
                for id in 0..iters as u32 {
                    heap.cancel(black_box(id));
                }
                start.elapsed()
            })
        });
        group.bench_with_input(BenchmarkId::new("delay_queue", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let rt = paused_runtime();
                rt.block_on(async {
                    let mut rng = XorShift(0x5eed);
                    let total = n + iters as usize;
                    let mut queue = tokio_util::time::DelayQueue::with_capacity(total);
                    let keys: Vec<_> = (0..total as u32)
                        .map(|i| queue.insert(i, Duration::from_millis(1 + rng.below(WINDOW_MS))))
                        .collect();
                    let start = Instant::now();
                    for key in keys.iter().take(iters as usize) {
                        black_box(queue.remove(key));
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

/// Expiry cost per expired record: fill with `n` timers spread over a
/// minute, then drain them by advancing one driver tick at a time. The
/// elapsed time is scaled to `iters` expirations.
fn expire(c: &mut Criterion) {
    let mut group = c.benchmark_group("timer_expire");
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        group.bench_with_input(BenchmarkId::new("wheel", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                scaled(iters, n as u64, || {
                    let mut rng = XorShift(0x5eed);
                    let (mut wheel, _) = wheel_with(n, &mut rng);
                    let mut out: Vec<Fired<u32>> = Vec::with_capacity(4096);
                    let start = Instant::now();
                    let mut now = 0;
                    while now <= WINDOW_MS {
                        now += TICK_MS;
                        out.clear();
                        wheel.advance(now, &mut out);
                        black_box(out.len());
                    }
                    start.elapsed()
                })
            })
        });
        group.bench_with_input(BenchmarkId::new("lazy_heap", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                scaled(iters, n as u64, || {
                    let mut rng = XorShift(0x5eed);
                    let mut heap = heap_with(n, &mut rng);
                    let start = Instant::now();
                    let mut now = 0;
                    while now <= WINDOW_MS {
                        now += TICK_MS;
                        black_box(heap.expire(now));
                    }
                    start.elapsed()
                })
            })
        });
        group.bench_with_input(BenchmarkId::new("delay_queue", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                scaled(iters, n as u64, || {
                    let mut rng = XorShift(0x5eed);
                    delay_queue_drain(n as u64, |_| 1 + rng.below(WINDOW_MS))
                })
            })
        });
        group.bench_with_input(BenchmarkId::new("ttlmap_sweep", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                scaled(iters, n as u64, || {
                    let mut rng = XorShift(0x5eed);
                    let clock = Arc::new(ManualClock::new());
                    let config = TtlConfig {
                        entries_max: n as u64,
                        ..TtlConfig::default()
                    };
                    let map = TtlMap::new(config, clock.clone()).unwrap();
                    for i in 0..n as u64 {
                        map.insert(i, (), Duration::from_millis(1 + rng.below(WINDOW_MS)))
                            .unwrap();
                    }
                    let mut out = Vec::with_capacity(4096);
                    let start = Instant::now();
                    while !map.is_empty() {
                        clock.advance(Duration::from_millis(TICK_MS));
                        out.clear();
                        black_box(map.sweep_into(&mut out));
                    }
                    start.elapsed()
                })
            })
        });
        group.bench_with_input(BenchmarkId::new("dashmap_remove", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                scaled(iters, n as u64, || {
                    let map =
                        dashmap::DashMap::with_capacity_and_hasher(n, ahash::RandomState::new());
                    let mut rng = XorShift(0x5eed);
                    let mut order: Vec<u64> = (0..n as u64).collect();
                    for i in (1..order.len()).rev() {
                        order.swap(i, rng.below(i as u64 + 1) as usize);
                    }
                    for i in 0..n as u64 {
                        map.insert(i, ());
                    }
                    let start = Instant::now();
                    for k in &order {
                        black_box(map.remove(k));
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = insert, cancel, expire
}
criterion_main!(benches);
