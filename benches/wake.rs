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

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
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
                    pongs.recv().unwrap();
                },
                move |stop| loop {
                    pings.recv().unwrap();
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

criterion_group! {
    name = benches;
    config = config();
    targets = fanout, pingpong
}
criterion_main!(benches);
