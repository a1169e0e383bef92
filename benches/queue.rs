//! Job queue throughput: enqueue → claim → ack, against what a relay would
//! otherwise write: one `Mutex` over a `VecDeque` of ready jobs, a
//! `BinaryHeap` of claim deadlines (for lapses) and a `HashMap` of jobs;
//! and a bounded `crossbeam-channel`, the floor (no claims, no retries, no
//! lapses). Payloads of 64 bytes; on 1 and 2 threads, claims of 1 and of
//! 16 jobs.

mod support;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use relaystore::queue::{JobOptions, QueueConfig};
use relaystore::{Store, TenantId};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);
const PAYLOAD: [u8; 64] = [7; 64];
const BATCH: usize = 16;

fn store() -> Store {
    let store = Store::builder().build().unwrap();
    let queue = QueueConfig::default().jobs_max(1 << 16);
    store.create_queue(T, "work", queue).unwrap();
    store
}

/// The hand-written baseline's state.
#[derive(Default)]
struct Plain {
    next: u64,
    ready: VecDeque<u64>,
    lapses: BinaryHeap<Reverse<(u64, u64)>>,
    jobs: HashMap<u64, (Arc<[u8]>, u32, u64)>,
}

struct Baseline(Mutex<Plain>);

impl Baseline {
    fn enqueue(&self, payload: &[u8]) -> u64 {
        let mut q = self.0.lock().unwrap();
        q.next += 1;
        let id = q.next;
        q.jobs.insert(id, (Arc::from(payload), 0, 0));
        q.ready.push_back(id);
        id
    }

    fn claim(&self, max: usize, now: u64) -> Vec<(u64, u64, Arc<[u8]>)> {
        let mut q = self.0.lock().unwrap();
        let mut out = Vec::new();
        while out.len() < max {
            let Some(id) = q.ready.pop_front() else { break };
            q.next += 1;
            let token = q.next;
            let job = q.jobs.get_mut(&id).unwrap();
            job.1 += 1;
            job.2 = token;
            let payload = Arc::clone(&job.0);
            q.lapses.push(Reverse((now + 300_000, id)));
            out.push((id, token, payload));
        }
        out
    }

    fn ack(&self, id: u64, token: u64) -> bool {
        let mut q = self.0.lock().unwrap();
        match q.jobs.get(&id) {
            Some(job) if job.2 == token => {
                q.jobs.remove(&id);
                // Lapse entries of acked jobs are dropped lazily.
                while q
                    .lapses
                    .peek()
                    .is_some_and(|Reverse((_, i))| !q.jobs.contains_key(i))
                {
                    q.lapses.pop();
                }
                true
            }
            _ => false,
        }
    }
}

/// `n` enqueue → claim → ack cycles of `batch` jobs on `threads` threads,
/// each thread on its own jobs of one shared queue.
fn cycles_store(s: &Store, threads: usize, n: u64, batch: usize) -> Duration {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for w in 0..threads {
            scope.spawn(move || {
                let worker = format!("w{w}");
                for _ in 0..n / threads as u64 {
                    for _ in 0..batch {
                        s.enqueue(T, "work", &PAYLOAD, JobOptions::default())
                            .unwrap();
                    }
                    for job in s.claim(T, "work", &worker, None, batch).unwrap() {
                        s.ack(T, "work", job.id, job.claim).unwrap();
                    }
                }
            });
        }
    });
    started.elapsed()
}

fn cycles_baseline(q: &Baseline, threads: usize, n: u64, batch: usize) -> Duration {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(move || {
                for _ in 0..n / threads as u64 {
                    for _ in 0..batch {
                        q.enqueue(&PAYLOAD);
                    }
                    for (id, token, payload) in q.claim(batch, 0) {
                        black_box(payload);
                        assert!(q.ack(id, token));
                    }
                }
            });
        }
    });
    started.elapsed()
}

fn cycles_channel(threads: usize, n: u64, batch: usize) -> Duration {
    let (tx, rx) = crossbeam_channel::bounded::<Arc<[u8]>>(1 << 16);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (tx, rx) = (tx.clone(), rx.clone());
            scope.spawn(move || {
                for _ in 0..n / threads as u64 {
                    for _ in 0..batch {
                        tx.send(Arc::from(&PAYLOAD[..])).unwrap();
                    }
                    for _ in 0..batch {
                        black_box(rx.try_recv().ok());
                    }
                }
            });
        }
    });
    started.elapsed()
}

fn cycle(c: &mut Criterion) {
    for threads in [1, 2] {
        for batch in [1, BATCH] {
            let name = format!("queue_cycle/{threads}thread/claim{batch}");
            let mut group = c.benchmark_group(name);
            group.throughput(Throughput::Elements(batch as u64));
            let s = store();
            group.bench_function("store", |b| {
                b.iter_custom(|n| cycles_store(&s, threads, n, batch))
            });
            let q = Baseline(Mutex::new(Plain::default()));
            group.bench_function("mutex_vecdeque_heap", |b| {
                b.iter_custom(|n| cycles_baseline(&q, threads, n, batch))
            });
            group.bench_function("crossbeam_channel", |b| {
                b.iter_custom(|n| cycles_channel(threads, n, batch))
            });
            group.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = support::short_runs();
    targets = cycle
}
criterion_main!(benches);
