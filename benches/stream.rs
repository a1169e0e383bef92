//! Stream append and read against the structures a relay would otherwise
//! use: a `Mutex<VecDeque>` ring of entries and a bounded
//! `crossbeam-channel`. Payloads of 64 bytes; every structure keeps at
//! most 65,536 entries, dropping its oldest when full.

mod support;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{Store, TenantId};
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::{Arc, Mutex};

const T: TenantId = TenantId(1);
const HELD: usize = 1 << 16;
const PAYLOAD: [u8; 64] = [7; 64];

/// The hand-written baseline: entries with their offsets, and the next.
type Ring = Mutex<(u64, VecDeque<(u64, Arc<[u8]>)>)>;

fn store() -> Store {
    let store = Store::builder().build().unwrap();
    let retention = StreamConfig::new(HELD, HELD * 64, WhenFull::TrimOldest);
    store.create_stream(T, "log", retention).unwrap();
    store
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("stream_append/64B");
    group.throughput(Throughput::Elements(1));
    let s = store();
    group.bench_function("store", |b| {
        b.iter(|| black_box(s.append(T, "log", &PAYLOAD, None).unwrap()))
    });
    let ring: Ring = Mutex::new((0, VecDeque::new()));
    group.bench_function("mutex_vecdeque", |b| {
        b.iter(|| {
            let mut ring = ring.lock().unwrap();
            if ring.1.len() >= HELD {
                ring.1.pop_front();
            }
            let offset = ring.0;
            ring.0 += 1;
            ring.1.push_back((offset, Arc::from(&PAYLOAD[..])));
            black_box(offset)
        })
    });
    let (tx, rx) = crossbeam_channel::bounded::<Arc<[u8]>>(HELD);
    group.bench_function("crossbeam_channel", |b| {
        b.iter(|| {
            if tx.is_full() {
                rx.try_recv().unwrap();
            }
            tx.try_send(Arc::from(&PAYLOAD[..])).unwrap();
        })
    });
    group.finish();
}

fn read(c: &mut Criterion) {
    let mut group = c.benchmark_group("stream_read/100x64B");
    group.throughput(Throughput::Elements(100));
    let s = store();
    for _ in 0..1000 {
        s.append(T, "log", &PAYLOAD, None).unwrap();
    }
    group.bench_function("store", |b| {
        b.iter(|| black_box(s.read_stream(T, "log", 500, 100).unwrap()))
    });
    let ring: Mutex<VecDeque<(u64, Arc<[u8]>)>> =
        Mutex::new((0..1000).map(|i| (i, Arc::from(&PAYLOAD[..]))).collect());
    group.bench_function("mutex_vecdeque", |b| {
        b.iter(|| {
            let ring = ring.lock().unwrap();
            let first = ring.front().unwrap().0;
            let out: Vec<(u64, Arc<[u8]>)> = ring
                .iter()
                .skip((500 - first) as usize)
                .take(100)
                .cloned()
                .collect();
            black_box(out)
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::short_runs();
    targets = append, read
}
criterion_main!(benches);
