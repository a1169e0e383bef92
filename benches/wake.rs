//! Wake channels against the usual ways a relay wakes its workers.
//!
//! - `wake_fanout/{1,64}`: one notify, then every listener takes its wake
//!   (one thread): the store's `notify` + `try_recv`, against one
//!   `tokio::sync::Notify` per listener (`notify_one` stores a permit, a
//!   poll takes it) and one `Mutex<bool>` + `Condvar` per listener.
//! - `wake_pingpong`: the latency of a wake across threads, as a round
//!   trip (two wakes) between two threads blocked in their receive: the
//!   store's blocking `recv`, tokio `Notify` awaited on a parking executor,
//!   and a `Mutex<bool>` + `Condvar` pair.
//! - `wake_latency` (not a criterion group; printed after them): the
//!   distribution of one-way wake latency across threads, notify to the
//!   woken thread running, for the same three, as p50 / p99 / p99.9 over
//!   `LATENCY_SAMPLES` wakes each, in three interleaved rounds.

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use relaystore::{Store, TenantId};
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

const T: TenantId = TenantId(1);

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
}

/// A `Mutex` + `Condvar` wake flag: the hand-written baseline. Like the
/// store, it signals only when someone sleeps (a signal is a system call).
#[derive(Default)]
struct Flag {
    state: Mutex<(bool, usize)>,
    ready: Condvar,
}

impl Flag {
    fn raise(&self) {
        let mut state = self.state.lock().unwrap();
        if !state.0 {
            state.0 = true;
            if state.1 > 0 {
                self.ready.notify_one();
            }
        }
    }

    fn try_take(&self) -> bool {
        std::mem::take(&mut self.state.lock().unwrap().0)
    }

    fn wait(&self) {
        let mut state = self.state.lock().unwrap();
        while !state.0 {
            state.1 += 1;
            state = self.ready.wait(state).unwrap();
            state.1 -= 1;
        }
        state.0 = false;
    }
}

/// Polls a future once with a no-op waker.
fn poll_once<F: Future>(future: F) -> bool {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    future.as_mut().poll(&mut cx).is_ready()
}

/// Runs a future to completion on this thread, parking while it waits.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

fn fanout(c: &mut Criterion) {
    for listeners in [1usize, 64] {
        let mut group = c.benchmark_group(format!("wake_fanout/{listeners}"));
        group.throughput(Throughput::Elements(listeners as u64));
        let store = Store::builder().build().unwrap();
        let attached: Vec<_> = (0..listeners)
            .map(|_| store.listen(T, "lobby").unwrap())
            .collect();
        group.bench_function(BenchmarkId::new("store", listeners), |b| {
            b.iter(|| {
                store.notify(T, "lobby").unwrap();
                for l in &attached {
                    black_box(l.try_recv().unwrap());
                }
            })
        });
        let notifies: Vec<Notify> = (0..listeners).map(|_| Notify::new()).collect();
        group.bench_function(BenchmarkId::new("tokio_notify", listeners), |b| {
            b.iter(|| {
                for n in &notifies {
                    n.notify_one();
                }
                for n in &notifies {
                    assert!(poll_once(n.notified()));
                }
            })
        });
        let flags: Vec<Flag> = (0..listeners).map(|_| Flag::default()).collect();
        group.bench_function(BenchmarkId::new("mutex_condvar", listeners), |b| {
            b.iter(|| {
                for f in &flags {
                    f.raise();
                }
                for f in &flags {
                    assert!(f.try_take());
                }
            })
        });
        group.finish();
    }
}

/// Round trips between this thread and a partner: `ping` wakes the
/// partner, which answers with `pong`. Returns the time for `iters`.
fn round_trips(
    iters: u64,
    ping: impl Fn() + Send + 'static,
    wait_pong: impl Fn(),
    partner: impl FnOnce(Arc<AtomicBool>) + Send + 'static,
) -> Duration {
    let stop = Arc::new(AtomicBool::new(false));
    let handle = {
        let stop = stop.clone();
        std::thread::spawn(move || partner(stop))
    };
    let started = Instant::now();
    for _ in 0..iters {
        ping();
        wait_pong();
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    ping();
    handle.join().unwrap();
    elapsed
}

fn pingpong(c: &mut Criterion) {
    let mut group = c.benchmark_group("wake_pingpong");
    group.bench_function("store", |b| {
        b.iter_custom(|iters| {
            let store = Store::builder().build().unwrap();
            let pings = store.listen(T, "ping").unwrap();
            let pongs = store.listen(T, "pong").unwrap();
            let (s1, s2) = (store.clone(), store.clone());
            round_trips(
                iters,
                move || s1.notify(T, "ping").unwrap(),
                || {
                    pongs.blocking_recv().unwrap();
                },
                move |stop| loop {
                    pings.blocking_recv().unwrap();
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    s2.notify(T, "pong").unwrap();
                },
            )
        })
    });
    group.bench_function("tokio_notify", |b| {
        b.iter_custom(|iters| {
            let ping = Arc::new(Notify::new());
            let pong = Arc::new(Notify::new());
            let (p1, p2, q2) = (ping.clone(), ping.clone(), pong.clone());
            round_trips(
                iters,
                move || p1.notify_one(),
                || block_on(pong.notified()),
                move |stop| loop {
                    block_on(p2.notified());
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    q2.notify_one();
                },
            )
        })
    });
    group.bench_function("mutex_condvar", |b| {
        b.iter_custom(|iters| {
            let ping = Arc::new(Flag::default());
            let pong = Arc::new(Flag::default());
            let (p1, p2, q2) = (ping.clone(), ping.clone(), pong.clone());
            round_trips(
                iters,
                move || p1.raise(),
                || pong.wait(),
                move |stop| loop {
                    p2.wait();
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    q2.raise();
                },
            )
        })
    });
    group.finish();
}

/// Wakes measured per implementation and round.
const LATENCY_SAMPLES: u64 = 20_000;

/// One-way latencies: before each ping the pinger stamps the time; the
/// partner, once woken, records how long ago that was, then answers so the
/// next ping starts from both threads idle. Returns the partner's
/// histogram (nanoseconds).
fn one_way(
    ping: impl Fn() + Send + 'static,
    wait_pong: impl Fn(),
    wait_ping: impl Fn() + Send + 'static,
    pong: impl Fn() + Send + 'static,
) -> hdrhistogram::Histogram<u64> {
    let base = Instant::now();
    let stamp = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let partner = {
        let (stamp, stop) = (stamp.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut hist = hdrhistogram::Histogram::<u64>::new(3).unwrap();
            loop {
                wait_ping();
                let now = base.elapsed().as_nanos() as u64;
                if stop.load(Ordering::SeqCst) {
                    break hist;
                }
                hist.record(now.saturating_sub(stamp.load(Ordering::SeqCst)))
                    .unwrap();
                pong();
            }
        })
    };
    for _ in 0..LATENCY_SAMPLES {
        // Let the partner block in its receive, as an idle worker does.
        std::thread::sleep(Duration::from_micros(20));
        stamp.store(base.elapsed().as_nanos() as u64, Ordering::SeqCst);
        ping();
        wait_pong();
    }
    stop.store(true, Ordering::SeqCst);
    ping();
    partner.join().unwrap()
}

fn latency_store() -> hdrhistogram::Histogram<u64> {
    let store = Store::builder().build().unwrap();
    let pings = store.listen(T, "ping").unwrap();
    let pongs = store.listen(T, "pong").unwrap();
    let (s1, s2) = (store.clone(), store.clone());
    one_way(
        move || s1.notify(T, "ping").unwrap(),
        move || {
            pongs.blocking_recv().unwrap();
        },
        move || {
            pings.blocking_recv().unwrap();
        },
        move || s2.notify(T, "pong").unwrap(),
    )
}

fn latency_tokio() -> hdrhistogram::Histogram<u64> {
    let ping = Arc::new(Notify::new());
    let pong = Arc::new(Notify::new());
    let (p1, p2, q1, q2) = (ping.clone(), ping, pong.clone(), pong);
    one_way(
        move || p1.notify_one(),
        move || block_on(q1.notified()),
        move || block_on(p2.notified()),
        move || q2.notify_one(),
    )
}

fn latency_condvar() -> hdrhistogram::Histogram<u64> {
    let ping = Arc::new(Flag::default());
    let pong = Arc::new(Flag::default());
    let (p1, p2, q1, q2) = (ping.clone(), ping, pong.clone(), pong);
    one_way(
        move || p1.raise(),
        move || q1.wait(),
        move || p2.wait(),
        move || q2.raise(),
    )
}

/// Prints p50 / p99 / p99.9 of one-way wake latency per implementation
/// and round, and the median of the rounds.
fn latency_report() {
    type Measure = fn() -> hdrhistogram::Histogram<u64>;
    let impls: [(&str, Measure); 3] = [
        ("store", latency_store),
        ("tokio_notify", latency_tokio),
        ("mutex_condvar", latency_condvar),
    ];
    let mut rounds: Vec<Vec<[u64; 3]>> = vec![Vec::new(); impls.len()];
    for _ in 0..3 {
        for (i, (_, measure)) in impls.iter().enumerate() {
            let h = measure();
            let q = |q: f64| h.value_at_quantile(q) / 1_000;
            rounds[i].push([q(0.5), q(0.99), q(0.999)]);
        }
    }
    println!("wake_latency: one-way, notify -> woken thread, {LATENCY_SAMPLES} wakes per round, microseconds");
    for ((name, _), runs) in impls.iter().zip(&rounds) {
        let median = |k: usize| {
            let mut v: Vec<u64> = runs.iter().map(|r| r[k]).collect();
            v.sort_unstable();
            v[v.len() / 2]
        };
        println!(
            "  {name:<14} p50 {:>4}  p99 {:>5}  p99.9 {:>5}   (rounds: {:?})",
            median(0),
            median(1),
            median(2),
            runs
        );
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = fanout, pingpong
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // With a filter, the report runs only when the filter names it.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if filters.is_empty() || filters.iter().any(|f| "wake_latency".contains(f.as_str())) {
        latency_report();
    }
}
