//! Admission counters: uncontended, and with two threads, side by side with
//! a `Mutex<u64>` counter (what one would write by hand).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use relaystore::quota::{Counter, Reservation};
use relaystore::Scope;
use std::hint::black_box;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

const LIMIT: u64 = 1 << 40;

fn counter() -> Counter {
    Counter::new(Scope::Named("bench"), LIMIT)
}

fn mutex_acquire(m: &Mutex<u64>) -> bool {
    let mut used = m.lock().unwrap();
    if *used < LIMIT {
        *used += 1;
        true
    } else {
        false
    }
}

fn uncontended(c: &mut Criterion) {
    let mut group = c.benchmark_group("quota_uncontended");
    group.throughput(Throughput::Elements(1));
    let ctr = counter();
    group.bench_function("check_has_room", |b| {
        b.iter(|| black_box(ctr.used() < ctr.limit()))
    });
    group.bench_function("try_acquire", |b| {
        b.iter_custom(|iters| {
            let ctr = counter();
            let start = Instant::now();
            for _ in 0..iters {
                black_box(ctr.try_acquire(1));
            }
            start.elapsed()
        })
    });
    group.bench_function("acquire_release", |b| {
        b.iter(|| {
            black_box(ctr.try_acquire(1));
            ctr.release(1);
        })
    });
    let scopes = [counter(), counter(), counter()];
    group.bench_function("reservation_3_scopes", |b| {
        b.iter(|| {
            let r = Reservation::acquire(&[(&scopes[0], 1), (&scopes[1], 1), (&scopes[2], 1)]);
            black_box(r.is_ok());
        })
    });
    let m = Mutex::new(0u64);
    group.bench_function("mutex_baseline_acquire_release", |b| {
        b.iter(|| {
            black_box(mutex_acquire(&m));
            *m.lock().unwrap() -= 1;
        })
    });
    group.finish();
}

/// Two threads acquire+release: on one shared counter (true contention) and
/// on two separate counters (checks the padding keeps them independent).
fn two_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("quota_2_threads");
    group.throughput(Throughput::Elements(2));
    for shared in [true, false] {
        let label = if shared {
            "shared_counter"
        } else {
            "separate_counters"
        };
        group.bench_with_input(BenchmarkId::new("counter", label), &shared, |b, &shared| {
            b.iter_custom(|iters| {
                let counters = Arc::new([counter(), counter()]);
                run_pair(iters, move |t| {
                    let c = &counters[if shared { 0 } else { t }];
                    black_box(c.try_acquire(1));
                    c.release(1);
                })
            })
        });
        group.bench_with_input(
            BenchmarkId::new("mutex_baseline", label),
            &shared,
            |b, &shared| {
                b.iter_custom(|iters| {
                    let ms = Arc::new([Mutex::new(0u64), Mutex::new(0u64)]);
                    run_pair(iters, move |t| {
                        let m = &ms[if shared { 0 } else { t }];
                        black_box(mutex_acquire(m));
                        *m.lock().unwrap() -= 1;
                    })
                })
            },
        );
    }
    group.finish();
}

/// Runs `op(thread)` `iters` times on each of two threads started together;
/// returns the wall time of the slower one.
fn run_pair(iters: u64, op: impl Fn(usize) + Send + Sync + Clone + 'static) -> Duration {
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let (barrier, op) = (Arc::clone(&barrier), op.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let start = Instant::now();
                for _ in 0..iters {
                    op(t);
                }
                start.elapsed()
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .max()
        .unwrap()
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = uncontended, two_threads
}
criterion_main!(benches);
