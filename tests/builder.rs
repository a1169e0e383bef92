//! Construction and handles: `Store::builder()` starts an expiry driver by
//! default, so a store built as the README shows keeps authorizing joins
//! after `driver_stall_max`; the driver never keeps a dropped store alive;
//! `Store` and `LockGuard` are `'static + Send` handles.
//!
//! These tests run the real driver thread on the system clock, with short
//! limits and bounded waits. They live in their own binary, one test, so no
//! other test's drivers are counted.

use relaystore::{Error, Health, LockGuard, Store, StoreConfig, TenantId};
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);

fn short() -> StoreConfig {
    StoreConfig::default()
        .ttl_min(Duration::from_millis(10))
        .driver_stall_max(Duration::from_millis(500))
}

/// Threads of this process named like the driver (Linux).
fn drivers() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        panic!("this test reads /proc/self/task (Linux)");
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "relaystore-expi")
        .count()
}

/// Waits up to `limit` for `done`, checking every 5 ms.
fn eventually(limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done()
}

fn join_once(s: &Store) -> Result<(), Error> {
    s.begin_join(T, "lobby", "c", Duration::from_secs(10), None)
        .map(drop)
}

#[test]
fn a_built_store_keeps_itself_healthy_and_its_handles_are_static() {
    fn handle<T: Send + Sync + 'static>() {}
    handle::<Store>();
    handle::<LockGuard>();

    // A driver sweeps by default: joins keep working past the stall bound,
    // and expired records are reclaimed without anyone calling sweep.
    assert_eq!(drivers(), 0);
    let driven = Store::builder().config(short()).build().unwrap();
    // The thread names itself once it runs.
    assert!(eventually(Duration::from_secs(2), || drivers() == 1));
    let lease = driven.grant(T, "h", Duration::from_secs(60), None).unwrap();
    driven.publish(T, lease.id, "lobby", b"", None).unwrap();
    driven
        .grant(T, "h", Duration::from_millis(20), None)
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(driven.health(), Health::Ready);
    join_once(&driven).unwrap();
    assert!(
        eventually(Duration::from_secs(5), || driven.stats().leases == 1),
        "the driver did not reclaim the expired lease: {:?}",
        driven.stats()
    );

    // Without one, the same store fails closed once the bound passes.
    let idle = Store::builder()
        .config(short())
        .without_expiry_driver()
        .build()
        .unwrap();
    let lease = idle.grant(T, "h", Duration::from_secs(60), None).unwrap();
    idle.publish(T, lease.id, "lobby", b"", None).unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert!(matches!(idle.health(), Health::Degraded { .. }));
    assert_eq!(
        join_once(&idle),
        Err(Error::ServiceUnavailable {
            reason: relaystore::Unavailable::DriverStalled
        })
    );

    // A lock guard moves into another thread and releases there.
    let guard = driven
        .try_lock(T, "match-42", "worker-a", Duration::from_secs(5), None)
        .unwrap()
        .unwrap();
    std::thread::spawn(move || guard.release().unwrap())
        .join()
        .unwrap();
    assert_eq!(driven.get_lock(T, "match-42"), Err(Error::NotFound));

    // The driver holds no handle: dropping the last one ends it.
    let clone = driven.clone();
    drop(driven);
    assert_eq!(drivers(), 1, "a clone keeps the store, and its driver");
    drop(clone);
    assert!(
        eventually(Duration::from_secs(2), || drivers() == 0),
        "the driver outlived its store"
    );

    // A tick the stall bound would flag is refused.
    for tick in [Duration::ZERO, Duration::from_millis(500)] {
        let built = Store::builder().config(short()).expiry_tick(tick).build();
        assert!(
            matches!(
                built,
                Err(Error::InvalidConfig {
                    field: "expiry_tick",
                    ..
                })
            ),
            "{tick:?}"
        );
    }
    assert_eq!(drivers(), 0);
}
