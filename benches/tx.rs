//! Transactions: what a commit costs over the same changes made one by
//! one. The relay's case: a listing update, an append to the listing's
//! stream and an outbox message about it, first as three plain operations,
//! then as one transaction (staged, committed). Also one notify, plain and
//! as a one-operation transaction: the fixed cost of a commit.

mod support;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{Store, TenantId};
use std::hint::black_box;
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);
const ATTRS: &[u8] = b"mode=ffa;players=7";
const ENTRY: [u8; 64] = [7; 64];
/// Outbox messages delivered (untimed) every this many rounds, so the
/// outbox never fills.
const DRAIN_EVERY: u64 = 1_000;

fn relay() -> (Store, u64) {
    let store = Store::builder().build().unwrap();
    let lease = store
        .grant(T, "host", Duration::from_secs(3600), None)
        .unwrap();
    let version = store
        .publish(T, lease.id, "lobby", ATTRS, None)
        .unwrap()
        .version;
    let config = StreamConfig::new(1 << 12, 1 << 20, WhenFull::TrimOldest);
    store.create_stream(T, "lobby-log", config).unwrap();
    (store, version)
}

fn drain(store: &Store) {
    while store
        .outbox_run_once(T, "bench", 1_000, |_| Ok::<_, String>(()))
        .unwrap()
        .delivered
        > 0
    {}
}

/// `rounds` of the three changes, timed without the outbox drains.
fn three(rounds: u64, in_tx: bool) -> Duration {
    let (store, mut version) = relay();
    let mut took = Duration::ZERO;
    for i in 0..rounds {
        if i % DRAIN_EVERY == 0 {
            drain(&store);
        }
        let started = Instant::now();
        if in_tx {
            let mut tx = store.begin_tx();
            tx.update_listing(T, "lobby", version, ATTRS).unwrap();
            tx.append(T, "lobby-log", &ENTRY).unwrap();
            tx.outbox_put(T, "lobby.changed", b"lobby").unwrap();
            let done = tx.commit().unwrap();
            version = done.listing_version(T, "lobby").unwrap();
        } else {
            version = store.update_listing(T, "lobby", version, ATTRS).unwrap();
            store.append(T, "lobby-log", &ENTRY, None).unwrap();
            store
                .outbox_put(T, "lobby.changed", b"lobby", None)
                .unwrap();
        }
        took += started.elapsed();
        black_box(version);
    }
    took
}

fn one_notify(rounds: u64, in_tx: bool) -> Duration {
    let (store, _) = relay();
    let started = Instant::now();
    for _ in 0..rounds {
        if in_tx {
            let mut tx = store.begin_tx();
            tx.notify(T, "lobby-changed").unwrap();
            black_box(tx.commit().unwrap());
        } else {
            store.notify(T, "lobby-changed").unwrap();
        }
    }
    started.elapsed()
}

fn transactions(c: &mut Criterion) {
    let mut group = c.benchmark_group("tx_update_append_outbox");
    group.throughput(Throughput::Elements(1));
    group.bench_function("plain", |b| b.iter_custom(|n| three(n, false)));
    group.bench_function("transaction", |b| b.iter_custom(|n| three(n, true)));
    group.finish();
    let mut group = c.benchmark_group("tx_notify");
    group.throughput(Throughput::Elements(1));
    group.bench_function("plain", |b| b.iter_custom(|n| one_notify(n, false)));
    group.bench_function("transaction", |b| b.iter_custom(|n| one_notify(n, true)));
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::short_runs();
    targets = transactions
}
criterion_main!(benches);
