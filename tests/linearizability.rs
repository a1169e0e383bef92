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
//!
//! Join attempts get the same treatment: 3 threads, 4 calls each, of bind
//! (one of two addresses), consume and cancel on one attempt's token,
//! against the sequential specification of an attempt (pending, bound to
//! an address, consumed, gone), through the engine contract, so the one
//! recorder runs on the in-memory engine (2,000 histories) and on the
//! Redis engine (300 per server, one handle per thread).

mod redis;

use relaystore::time::ManualClock;
use relaystore::{Error, RelayEngine, Store, StoreConfig, TenantId};
use std::collections::HashSet;
use std::net::SocketAddr;
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

/// A sequential specification: which (call, return) pairs a state allows,
/// and the state after.
trait Model {
    type State: Copy + Eq + std::hash::Hash + Default + std::fmt::Debug;
    type Call: Copy + std::fmt::Debug;
    type Ret: Copy + std::fmt::Debug;
    fn apply(state: Self::State, call: Self::Call, ret: Self::Ret) -> Option<Self::State>;
}

/// One completed operation: what was called, what it returned, and when
/// (from one counter shared by every thread).
struct Op<M: Model> {
    call: M::Call,
    ret: M::Ret,
    invoked: u64,
    returned: u64,
}

impl<M: Model> Op<M> {
    fn new(call: M::Call, ret: M::Ret, invoked: u64, returned: u64) -> Self {
        Op {
            call,
            ret,
            invoked,
            returned,
        }
    }
}

/// The fenced lock.
struct LockModel;

/// The sequential specification: (current holder's fence, highest fence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
struct LockState {
    holder: Option<u64>,
    highest: u64,
}

impl Model for LockModel {
    type State = LockState;
    type Call = Call;
    type Ret = Ret;
    fn apply(state: LockState, call: Call, ret: Ret) -> Option<LockState> {
        apply_lock(state, call, ret)
    }
}

fn apply_lock(state: LockState, call: Call, ret: Ret) -> Option<LockState> {
    match (call, ret) {
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
fn linearizable<M: Model>(ops: &[Op<M>]) -> bool {
    assert!(ops.len() <= 64);
    let all = if ops.len() == 64 {
        u64::MAX
    } else {
        (1u64 << ops.len()) - 1
    };
    let mut seen: HashSet<(u64, M::State)> = HashSet::new();
    fn search<M: Model>(
        ops: &[Op<M>],
        done: u64,
        all: u64,
        state: M::State,
        seen: &mut HashSet<(u64, M::State)>,
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
            if let Some(next) = M::apply(state, op.call, op.ret) {
                if search(ops, done | (1 << i), all, next, seen) {
                    return true;
                }
            }
        }
        false
    }
    search(ops, 0, all, M::State::default(), &mut seen)
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
fn record(lock: &dyn Lock, seed: u64) -> Vec<Op<LockModel>> {
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

/// Histories per Redis server (`RELAYSTORE_LIN_REDIS_HISTORIES`, 300).
fn redis_histories() -> u64 {
    std::env::var("RELAYSTORE_LIN_REDIS_HISTORIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// One engine handle per thread (each a relay instance) on a fresh store
/// of `target`.
fn redis_instances(
    runtime: &tokio::runtime::Runtime,
    target: &redis::Target,
    test: &str,
) -> Vec<relaystore::redis::RedisEngine> {
    let namespace = redis::fresh_namespace(test);
    (0..THREADS)
        .map(|_| {
            runtime
                .block_on(redis::connect_fresh(target, &namespace, redis::config()))
                .unwrap()
        })
        .collect()
}

fn histories() -> u64 {
    std::env::var("RELAYSTORE_LIN_HISTORIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// Panics, showing the history, unless it is linearizable.
fn check<M: Model>(history: &[Op<M>], what: &str) {
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
    let runs = redis_histories();
    let runtime = tokio_runtime();
    for target in redis::targets() {
        let engines = redis_instances(&runtime, &target, "lin");
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
    let op = Op::<LockModel>::new;
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

// ----- join attempts -----

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum JoinCall {
    /// Bind to address number `n`.
    Bind(u16),
    Consume,
    Cancel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum JoinRet {
    Bound,
    /// Admitted, bound to address number `n`.
    Admitted(u16),
    Cancelled,
    Conflict,
    Replayed,
    NotFound,
}

/// One attempt's sequential specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
enum JoinState {
    #[default]
    Pending,
    Bound(u16),
    Consumed(u16),
    Gone,
}

struct JoinModel;

impl Model for JoinModel {
    type State = JoinState;
    type Call = JoinCall;
    type Ret = JoinRet;
    fn apply(state: JoinState, call: JoinCall, ret: JoinRet) -> Option<JoinState> {
        use JoinCall::{Bind, Cancel, Consume};
        use JoinState::{Bound, Consumed, Gone, Pending};
        let (expected, next) = match (state, call) {
            (Pending, Bind(a)) => (JoinRet::Bound, Bound(a)),
            (Bound(b), Bind(a)) if a == b => (JoinRet::Bound, state),
            (Bound(_), Bind(_)) => (JoinRet::Conflict, state),
            (Bound(b), Consume) => (JoinRet::Admitted(b), Consumed(b)),
            (Pending, Consume) => (JoinRet::Conflict, state),
            (Pending | Bound(_), Cancel) => (JoinRet::Cancelled, Gone),
            (Consumed(_), _) => (JoinRet::Replayed, state),
            (Gone, _) => (JoinRet::NotFound, state),
        };
        (expected == ret).then_some(next)
    }
}

fn address(n: u16) -> SocketAddr {
    SocketAddr::from(([203, 0, 113, 9], 4000 + n))
}

/// What a call's result says, in the specification's terms.
fn join_ret<V>(result: Result<V, Error>, ok: impl FnOnce(V) -> JoinRet) -> JoinRet {
    match result {
        Ok(v) => ok(v),
        Err(Error::Conflict { .. }) => JoinRet::Conflict,
        Err(Error::ReplayRejected) => JoinRet::Replayed,
        Err(Error::NotFound) => JoinRet::NotFound,
        Err(e) => panic!("unexpected {e:?}"),
    }
}

/// Runs one history on a fresh attempt, thread `t` calling through
/// `engines[t]` (for the in-memory engine, clones of one store). With
/// `second_consume`, the broken twin: a consume refused as a replay is
/// reported as an admission (an engine that lets a second consume through).
fn record_join<E: RelayEngine>(
    engines: &[E],
    runtime: &tokio::runtime::Runtime,
    seed: u64,
    second_consume: bool,
) -> Vec<Op<JoinModel>> {
    let setup = &engines[0];
    let (lease, ticket) = runtime
        .block_on(async {
            let g = setup
                .grant(T, "host", Duration::from_secs(60), None)
                .await?;
            let key = format!("room-{seed}");
            setup.publish(T, g.id, &key, b"", None).await?;
            let ticket = setup
                .begin_join(T, &key, "client", Duration::from_secs(60), None)
                .await?;
            Ok::<_, Error>((g.id, ticket))
        })
        .unwrap();
    let clock = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    let ops = Mutex::new(Vec::new());
    let admitted = Mutex::new(None);
    std::thread::scope(|s| {
        for (t, engine) in engines.iter().enumerate().take(THREADS) {
            let (clock, barrier, ops, ticket) = (&clock, &barrier, &ops, &ticket);
            let admitted = &admitted;
            s.spawn(move || {
                let mut mine = Vec::new();
                let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (t as u64 + 1);
                barrier.wait();
                for _ in 0..OPS_PER_THREAD {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let call = match x % 7 {
                        0 => JoinCall::Cancel,
                        1..=3 => JoinCall::Bind((x / 7 % 2) as u16),
                        _ => JoinCall::Consume,
                    };
                    let invoked = clock.fetch_add(1, Ordering::SeqCst);
                    let mut ret = runtime.block_on(async {
                        match call {
                            JoinCall::Bind(a) => join_ret(
                                engine
                                    .bind_endpoint(T, ticket.attempt, &ticket.token, address(a))
                                    .await,
                                |_| JoinRet::Bound,
                            ),
                            JoinCall::Consume => {
                                join_ret(engine.consume(T, &ticket.token, None).await, |a| {
                                    JoinRet::Admitted(a.addr.port() - 4000)
                                })
                            }
                            JoinCall::Cancel => {
                                join_ret(engine.cancel_join(T, ticket.attempt).await, |()| {
                                    JoinRet::Cancelled
                                })
                            }
                        }
                    });
                    if let JoinRet::Admitted(a) = ret {
                        *admitted.lock().unwrap() = Some(a);
                    }
                    if let (true, JoinRet::Replayed, JoinCall::Consume, Some(a)) =
                        (second_consume, ret, call, *admitted.lock().unwrap())
                    {
                        ret = JoinRet::Admitted(a);
                    }
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
    runtime.block_on(setup.revoke(T, lease)).unwrap();
    ops.into_inner().unwrap()
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn join_histories_in_memory_are_linearizable() {
    let runtime = tokio_runtime();
    let store = store();
    let engines = vec![store.engine(); THREADS];
    let mut outcomes = HashSet::new();
    for seed in 0..2_000 {
        let history = record_join(&engines, &runtime, seed, false);
        outcomes.extend(history.iter().map(|op| op.ret));
        check(&history, &format!("join history {seed}"));
    }
    // The histories reach every kind of answer, so the specification was
    // exercised in full.
    assert_eq!(outcomes.len(), 7, "answers seen: {outcomes:?}");
}

#[test]
fn join_histories_on_redis_from_separate_instances_are_linearizable() {
    let runs = redis_histories();
    let runtime = tokio_runtime();
    for target in redis::targets() {
        let engines = redis_instances(&runtime, &target, "lin-join");
        let mut outcomes = HashSet::new();
        for seed in 0..runs {
            let history = record_join(&engines, &runtime, seed, false);
            outcomes.extend(history.iter().map(|op| op.ret));
            check(&history, &format!("{} join history {seed}", target.name));
        }
        assert_eq!(
            outcomes.len(),
            7,
            "{}: answers seen: {outcomes:?}",
            target.name
        );
    }
}

#[test]
fn the_checker_rejects_an_engine_that_lets_a_second_consume_through() {
    let runtime = tokio_runtime();
    let engines = vec![store().engine(); THREADS];
    let rejected = (0..500)
        .filter(|&seed| !linearizable(&record_join(&engines, &runtime, seed, true)))
        .count();
    assert!(
        rejected > 0,
        "the checker accepted every history of a second consume"
    );
}

#[test]
fn the_checker_accepts_and_rejects_hand_written_join_histories() {
    let op = Op::<JoinModel>::new;
    let ok = [
        op(JoinCall::Bind(0), JoinRet::Bound, 0, 1),
        op(JoinCall::Consume, JoinRet::Admitted(0), 2, 3),
        op(JoinCall::Consume, JoinRet::Replayed, 4, 5),
    ];
    assert!(linearizable(&ok));
    // Two admissions of one token: never.
    let twice = [
        op(JoinCall::Bind(0), JoinRet::Bound, 0, 1),
        op(JoinCall::Consume, JoinRet::Admitted(0), 2, 5),
        op(JoinCall::Consume, JoinRet::Admitted(0), 3, 4),
    ];
    assert!(!linearizable(&twice));
    // Admitted to an address it was not bound to.
    let wrong = [
        op(JoinCall::Bind(1), JoinRet::Bound, 0, 1),
        op(JoinCall::Consume, JoinRet::Admitted(0), 2, 3),
    ];
    assert!(!linearizable(&wrong));
    // A cancel overlapping a consume: either may go first.
    let raced = [
        op(JoinCall::Bind(0), JoinRet::Bound, 0, 1),
        op(JoinCall::Cancel, JoinRet::Replayed, 2, 5),
        op(JoinCall::Consume, JoinRet::Admitted(0), 3, 4),
    ];
    assert!(linearizable(&raced));
    // A bind after a completed cancel found the attempt.
    let revived = [
        op(JoinCall::Cancel, JoinRet::Cancelled, 0, 1),
        op(JoinCall::Bind(0), JoinRet::Bound, 2, 3),
    ];
    assert!(!linearizable(&revived));
}
