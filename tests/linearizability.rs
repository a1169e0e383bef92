//! Linearizability of named locks, checked on histories recorded from real
//! threads against the real store.
//!
//! Each history: 3 threads, 4 operations each, on one lock name, with every
//! invocation and return stamped from one global counter. A Wing–Gong
//! search (with memoisation on the set of operations already placed and the
//! lock state) looks for a sequential order that respects real time and the
//! sequential specification of a fenced lock:
//!
//! - `try_lock` returns `Some(fence)` iff the lock is free, and the fence
//!   exceeds every fence handed out before; `None` iff it is held;
//! - `get` returns the current holder's fence, or `None` if free;
//! - `release(fence)` frees the lock iff it is held with that fence.
//!
//! 10^4 histories run in CI (`RELAYSTORE_LIN_HISTORIES` for more). The
//! checker is shown to fail on a deliberately non-linearizable lock (one
//! whose `get` answers from a stale cache).
//!
//! The same histories run on the Redis engine, each thread with an engine
//! handle of its own (a relay instance), on a standalone server and on a
//! 3-master Cluster (`tests/redis/`): 300 histories per server
//! (`RELAYSTORE_LIN_REDIS_HISTORIES` for more).

mod redis;

use relaystore::time::ManualClock;
use relaystore::{Store, StoreConfig, TenantId};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

const T: TenantId = TenantId(1);
const NAME: &str = "res";
const THREADS: usize = 3;
const OPS_PER_THREAD: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Call {
    TryLock,
    Release(u64),
    Get,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ret {
    Locked(Option<u64>),
    Released,
    Holder(Option<u64>),
}

#[derive(Clone, Copy, Debug)]
struct Op {
    call: Call,
    ret: Ret,
    invoked: u64,
    returned: u64,
}

/// The sequential specification: (current holder's fence, highest fence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
struct LockState {
    holder: Option<u64>,
    highest: u64,
}

fn apply(state: LockState, op: &Op) -> Option<LockState> {
    match (op.call, op.ret) {
        (Call::TryLock, Ret::Locked(Some(f))) => (state.holder.is_none() && f > state.highest)
            .then_some(LockState {
                holder: Some(f),
                highest: f,
            }),
        (Call::TryLock, Ret::Locked(None)) => state.holder.is_some().then_some(state),
        (Call::Get, Ret::Holder(h)) => (h == state.holder).then_some(state),
        (Call::Release(f), Ret::Released) => Some(if state.holder == Some(f) {
            LockState {
                holder: None,
                ..state
            }
        } else {
            state
        }),
        _ => None,
    }
}

/// Wing–Gong: is there an order of `ops`, consistent with real time, that
/// the specification accepts?
fn linearizable(ops: &[Op]) -> bool {
    assert!(ops.len() <= 64);
    let all = if ops.len() == 64 {
        u64::MAX
    } else {
        (1u64 << ops.len()) - 1
    };
    let mut seen: HashSet<(u64, LockState)> = HashSet::new();
    fn search(
        ops: &[Op],
        done: u64,
        all: u64,
        state: LockState,
        seen: &mut HashSet<(u64, LockState)>,
    ) -> bool {
        if done == all {
            return true;
        }
        if !seen.insert((done, state)) {
            return false;
        }
        // The earliest return among pending operations bounds which ones may
        // go next: only those invoked before it.
        let horizon = ops
            .iter()
            .enumerate()
            .filter(|(i, _)| done & (1 << i) == 0)
            .map(|(_, op)| op.returned)
            .min()
            .expect("some operation is pending");
        for (i, op) in ops.iter().enumerate() {
            if done & (1 << i) != 0 || op.invoked > horizon {
                continue;
            }
            if let Some(next) = apply(state, op) {
                if search(ops, done | (1 << i), all, next, seen) {
                    return true;
                }
            }
        }
        false
    }
    search(ops, 0, all, LockState::default(), &mut seen)
}

/// Something that behaves like a fenced lock; `who` is the calling thread.
trait Lock: Send + Sync {
    fn try_lock(&self, who: usize) -> Option<u64>;
    fn release(&self, who: usize, fence: u64);
    fn get(&self, who: usize) -> Option<u64>;
}

struct Real(Store);

impl Lock for Real {
    fn try_lock(&self, owner: usize) -> Option<u64> {
        self.0
            .try_lock(T, NAME, &format!("w{owner}"), Duration::from_secs(60), None)
            .unwrap()
            .map(|g| g.fence())
    }
    fn release(&self, _: usize, fence: u64) {
        self.0.release_lock(T, NAME, fence).unwrap();
    }
    fn get(&self, _: usize) -> Option<u64> {
        self.0.get_lock(T, NAME).ok().map(|l| l.fence)
    }
}

/// The Redis engine: one handle per thread, calls run on `runtime`.
struct OnRedis<'a> {
    engines: &'a [relaystore::redis::RedisEngine],
    runtime: &'a tokio::runtime::Runtime,
    name: String,
}

impl Lock for OnRedis<'_> {
    fn try_lock(&self, who: usize) -> Option<u64> {
        let e = &self.engines[who];
        let taken = self.runtime.block_on(e.try_lock(
            T,
            &self.name,
            &format!("w{who}"),
            Duration::from_secs(60),
            None,
        ));
        taken.unwrap().map(|l| l.fence)
    }
    fn release(&self, who: usize, fence: u64) {
        let e = &self.engines[who];
        self.runtime
            .block_on(e.release_lock(T, &self.name, fence))
            .unwrap();
    }
    fn get(&self, who: usize) -> Option<u64> {
        let e = &self.engines[who];
        match self.runtime.block_on(e.get_lock(T, &self.name)) {
            Ok(l) => Some(l.fence),
            Err(relaystore::Error::NotFound) => None,
            Err(e) => panic!("get_lock: {e}"),
        }
    }
}

/// The injected bug: `get` answers from a cache refreshed only now and then,
/// so it can report a holder that has already released.
struct StaleReads {
    inner: Real,
    cache: Mutex<(u64, Option<u64>)>,
}

impl Lock for StaleReads {
    fn try_lock(&self, owner: usize) -> Option<u64> {
        self.inner.try_lock(owner)
    }
    fn release(&self, who: usize, fence: u64) {
        self.inner.release(who, fence)
    }
    fn get(&self, who: usize) -> Option<u64> {
        let mut cache = self.cache.lock().unwrap();
        cache.0 += 1;
        if cache.0 % 4 == 1 {
            cache.1 = self.inner.get(who);
        }
        cache.1
    }
}

fn store() -> Store {
    Store::new(StoreConfig::default(), Arc::new(ManualClock::new())).unwrap()
}

/// Runs one history on `lock` and returns it.
fn record(lock: &dyn Lock, seed: u64) -> Vec<Op> {
    let clock = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    let ops = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (clock, barrier, ops) = (&clock, &barrier, &ops);
            s.spawn(move || {
                let mut mine = Vec::new();
                let mut held = None;
                let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (t as u64 + 1);
                barrier.wait();
                for _ in 0..OPS_PER_THREAD {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let call = match (held, x % 3) {
                        (Some(f), 0) => Call::Release(f),
                        (_, 1) => Call::Get,
                        _ => Call::TryLock,
                    };
                    let invoked = clock.fetch_add(1, Ordering::SeqCst);
                    let ret = match call {
                        Call::TryLock => {
                            let r = lock.try_lock(t);
                            if r.is_some() {
                                held = r;
                            }
                            Ret::Locked(r)
                        }
                        Call::Release(f) => {
                            lock.release(t, f);
                            held = None;
                            Ret::Released
                        }
                        Call::Get => Ret::Holder(lock.get(t)),
                    };
                    let returned = clock.fetch_add(1, Ordering::SeqCst);
                    mine.push(Op {
                        call,
                        ret,
                        invoked,
                        returned,
                    });
                }
                ops.lock().unwrap().extend(mine);
            });
        }
    });
    ops.into_inner().unwrap()
}

fn histories() -> u64 {
    std::env::var("RELAYSTORE_LIN_HISTORIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// Panics, showing the history, unless it is linearizable.
fn check(history: &[Op], what: &str) {
    if !linearizable(history) {
        let mut lines: Vec<String> = history
            .iter()
            .map(|o| {
                format!(
                    "[{:>2}, {:>2}] {:?} -> {:?}",
                    o.invoked, o.returned, o.call, o.ret
                )
            })
            .collect();
        lines.sort();
        panic!("{what} is not linearizable:\n{}", lines.join("\n"));
    }
}

#[test]
fn lock_histories_from_real_threads_are_linearizable() {
    for seed in 0..histories() {
        // A fresh store per history keeps each history self-contained.
        let lock = Real(store());
        check(&record(&lock, seed), &format!("history {seed}"));
    }
}

#[test]
fn lock_histories_on_redis_from_separate_instances_are_linearizable() {
    let runs: u64 = std::env::var("RELAYSTORE_LIN_REDIS_HISTORIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for target in redis::targets() {
        let namespace = redis::fresh_namespace("lin");
        let engines: Vec<_> = (0..THREADS)
            .map(|_| {
                runtime
                    .block_on(redis::connect_fresh(&target, &namespace, redis::config()))
                    .unwrap()
            })
            .collect();
        for seed in 0..runs {
            // A lock name per history keeps each history self-contained.
            let lock = OnRedis {
                engines: &engines,
                runtime: &runtime,
                name: format!("res-{seed}"),
            };
            check(
                &record(&lock, seed),
                &format!("{} history {seed}", target.name),
            );
        }
    }
}

#[test]
fn the_checker_rejects_a_lock_with_stale_reads() {
    let rejected = (0..2_000)
        .filter(|&seed| {
            let lock = StaleReads {
                inner: Real(store()),
                cache: Mutex::new((0, None)),
            };
            !linearizable(&record(&lock, seed))
        })
        .count();
    assert!(
        rejected > 0,
        "the checker accepted every history of a broken lock"
    );
}

#[test]
fn the_checker_accepts_and_rejects_hand_written_histories() {
    let op = |call, ret, invoked, returned| Op {
        call,
        ret,
        invoked,
        returned,
    };
    // Sequential and fine.
    let ok = [
        op(Call::TryLock, Ret::Locked(Some(5)), 0, 1),
        op(Call::Get, Ret::Holder(Some(5)), 2, 3),
        op(Call::Release(5), Ret::Released, 4, 5),
        op(Call::Get, Ret::Holder(None), 6, 7),
    ];
    assert!(linearizable(&ok));
    // A read after the release returned still sees the holder: stale.
    let stale = [
        op(Call::TryLock, Ret::Locked(Some(5)), 0, 1),
        op(Call::Release(5), Ret::Released, 2, 3),
        op(Call::Get, Ret::Holder(Some(5)), 4, 5),
    ];
    assert!(!linearizable(&stale));
    // Overlapping: the read may take effect before the release.
    let overlapping = [
        op(Call::TryLock, Ret::Locked(Some(5)), 0, 1),
        op(Call::Release(5), Ret::Released, 2, 5),
        op(Call::Get, Ret::Holder(Some(5)), 3, 4),
    ];
    assert!(linearizable(&overlapping));
    // Two holders at once, or a fence going backwards: never.
    let double = [
        op(Call::TryLock, Ret::Locked(Some(5)), 0, 3),
        op(Call::TryLock, Ret::Locked(Some(6)), 1, 2),
    ];
    assert!(!linearizable(&double));
    let backwards = [
        op(Call::TryLock, Ret::Locked(Some(6)), 0, 1),
        op(Call::Release(6), Ret::Released, 2, 3),
        op(Call::TryLock, Ret::Locked(Some(5)), 4, 5),
    ];
    assert!(!linearizable(&backwards));
}
