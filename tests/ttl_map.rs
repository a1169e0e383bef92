//! Deterministic behaviour of `TtlMap` on a `ManualClock`.

use relaystore::time::{Clock, ManualClock, MonoTime};
use relaystore::{ConflictReason, Error, Scope, TtlConfig, TtlMap};
use std::sync::Arc;
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);

fn map_with(entries_max: u64) -> (Arc<ManualClock>, TtlMap<u32, String>) {
    let clock = Arc::new(ManualClock::new());
    let config = TtlConfig {
        name: "test",
        entries_max,
        ttl_min: Duration::from_millis(10),
        ttl_max: Duration::from_secs(3600),
    };
    let map = TtlMap::new(config, clock.clone()).expect("valid config");
    (clock, map)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn entry_is_live_until_one_millisecond_before_its_deadline() {
    let (clock, map) = map_with(10);
    let stamp = map.insert(1, "a".into(), SEC).unwrap();
    assert_eq!(stamp.deadline, MonoTime::from_millis(1000));
    clock.advance(ms(999));
    assert_eq!(map.get(&1).unwrap().0, "a");
    clock.advance(ms(1));
    assert_eq!(map.get(&1), Err(Error::Expired));
}

#[test]
fn expired_entry_is_never_observable_before_any_sweep() {
    let (clock, map) = map_with(10);
    map.insert(1, "a".into(), SEC).unwrap();
    clock.advance(SEC * 10);
    assert_eq!(map.get(&1), Err(Error::Expired));
    assert_eq!(map.stamp(&1), Err(Error::Expired));
    assert_eq!(map.remove(&1), Err(Error::Expired));
    assert_eq!(map.renew(&1, SEC), Err(Error::Expired));
    // Still physically held until the sweep: the decision is the clock's.
    assert_eq!(map.len(), 1);
    assert_eq!(map.sweep().len(), 1);
    assert_eq!(map.len(), 0);
    assert_eq!(map.get(&1), Err(Error::NotFound));
}

#[test]
fn sweep_never_removes_an_entry_before_its_deadline() {
    let (clock, map) = map_with(10);
    map.insert(1, "a".into(), SEC).unwrap();
    for _ in 0..999 {
        clock.advance(ms(1));
        assert!(map.sweep().is_empty(), "removed early at {:?}", clock.now());
    }
    clock.advance(ms(1));
    let removed = map.sweep();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].stamp.deadline, MonoTime::from_millis(1000));
}

#[test]
fn sweep_reclaims_exactly_at_the_deadline_tick() {
    let (clock, map) = map_with(10);
    map.insert(1, "a".into(), ms(1234)).unwrap();
    clock.set(MonoTime::from_millis(1234));
    let removed = map.sweep();
    assert_eq!(removed.iter().map(|r| r.key).collect::<Vec<_>>(), vec![1]);
}

#[test]
fn renew_after_deadline_is_expired_even_unswept() {
    let (clock, map) = map_with(10);
    map.insert(1, "a".into(), SEC).unwrap();
    clock.advance(SEC);
    assert_eq!(map.renew(&1, SEC * 60), Err(Error::Expired));
    assert_eq!(map.get(&1), Err(Error::Expired));
}

#[test]
fn renew_is_an_absolute_reset_from_now() {
    let (clock, map) = map_with(10);
    map.insert(1, "a".into(), SEC * 10).unwrap();
    clock.advance(SEC);
    // A shorter TTL moves the deadline earlier: it is a reset, not an extension.
    let stamp = map.renew(&1, SEC * 2).unwrap();
    assert_eq!(stamp.deadline, MonoTime::from_millis(3000));
    clock.advance(SEC * 2);
    assert_eq!(map.get(&1), Err(Error::Expired));
    // The wheel was pulled in too: reclaimed now, not at the old 10 s deadline.
    assert_eq!(map.sweep().len(), 1);
}

#[test]
fn renewed_entry_survives_its_original_deadline_sweep() {
    let (clock, map) = map_with(10);
    map.insert(1, "a".into(), SEC).unwrap();
    clock.advance(ms(900));
    map.renew(&1, SEC).unwrap();
    clock.advance(ms(200)); // past the original deadline of 1000
    assert!(map.sweep().is_empty());
    assert_eq!(map.get(&1).unwrap().0, "a");
    assert_eq!(map.scheduled(), 1, "rescheduled, not duplicated");
    clock.advance(ms(700)); // now 1800 >= 1900? no: still live
    assert!(map.sweep().is_empty());
    clock.advance(ms(100)); // now 1900 = new deadline
    assert_eq!(map.sweep().len(), 1);
    assert_eq!(map.scheduled(), 0);
}

#[test]
fn wall_clock_jumps_change_no_expiry_decision() {
    let (clock, map) = map_with(10);
    let stamp = map.insert(1, "a".into(), SEC * 10).unwrap();
    let reported = map.expires_at(&stamp);
    clock.jump_wall_forward(Duration::from_secs(86_400));
    assert_eq!(map.get(&1).unwrap().0, "a");
    assert!(map.sweep().is_empty());
    clock.jump_wall_backward(Duration::from_secs(2 * 86_400));
    assert_eq!(map.get(&1).unwrap().0, "a");
    assert!(map.sweep().is_empty());
    // The report follows the wall clock; the decision does not.
    assert_eq!(
        map.expires_at(&stamp) + Duration::from_secs(86_400),
        reported
    );
    clock.advance(SEC * 10);
    assert_eq!(map.get(&1), Err(Error::Expired));
}

#[test]
fn versions_strictly_increase_across_delete_and_recreate() {
    let (clock, map) = map_with(10);
    let mut last = 0;
    for round in 0..50 {
        let created = map.insert(7, format!("{round}"), SEC).unwrap();
        assert!(
            created.version > last,
            "round {round}: {} <= {last}",
            created.version
        );
        last = created.version;
        for _ in 0..(round % 4) {
            let renewed = map.renew(&7, SEC).unwrap();
            assert!(renewed.version > last);
            last = renewed.version;
        }
        match round % 3 {
            0 => {
                map.remove(&7).unwrap();
            }
            1 => {
                clock.advance(SEC);
                assert_eq!(map.sweep().len(), 1);
            }
            // Expired and replaced in place by the next insert, unswept.
            _ => clock.advance(SEC),
        }
    }
}

#[test]
fn stale_version_gets_conflict_with_the_current_version() {
    let (_clock, map) = map_with(10);
    let v1 = map.insert(1, "a".into(), SEC).unwrap().version;
    let v2 = map.renew_at(&1, SEC, v1).unwrap().version;
    assert!(v2 > v1);
    assert_eq!(
        map.renew_at(&1, SEC, v1),
        Err(Error::Conflict {
            reason: ConflictReason::Version,
            current_version: v2
        })
    );
    assert_eq!(
        map.remove_at(&1, v1),
        Err(Error::Conflict {
            reason: ConflictReason::Version,
            current_version: v2
        })
    );
    assert_eq!(map.remove_at(&1, v2), Ok("a".to_string()));
}

#[test]
fn insert_over_a_live_entry_is_a_conflict_and_changes_nothing() {
    let (_clock, map) = map_with(10);
    let v = map.insert(1, "a".into(), SEC).unwrap().version;
    assert_eq!(
        map.insert(1, "b".into(), SEC),
        Err(Error::Conflict {
            reason: ConflictReason::NameTaken,
            current_version: v
        })
    );
    assert_eq!(map.get(&1).unwrap().0, "a");
    assert_eq!((map.len(), map.admitted(), map.scheduled()), (1, 1, 1));
}

#[test]
fn insert_over_an_expired_entry_replaces_it() {
    let (clock, map) = map_with(10);
    map.insert(1, "a".into(), SEC).unwrap();
    clock.advance(SEC);
    map.insert(1, "b".into(), SEC).unwrap();
    assert_eq!(map.get(&1).unwrap().0, "b");
    assert_eq!((map.len(), map.admitted(), map.scheduled()), (1, 1, 1));
    assert!(map.sweep().is_empty(), "the old timer was cancelled");
}

#[test]
fn ttl_outside_the_configured_range_is_invalid_never_clamped() {
    let (_clock, map) = map_with(10);
    for bad in [Duration::ZERO, ms(9), Duration::from_secs(3601)] {
        assert!(
            matches!(
                map.insert(1, "a".into(), bad),
                Err(Error::InvalidArgument { .. })
            ),
            "{bad:?} accepted"
        );
    }
    assert!(map.is_empty());
    map.insert(1, "a".into(), ms(10)).unwrap();
    assert!(matches!(
        map.renew(&1, Duration::ZERO),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn sub_millisecond_ttl_rounds_up_never_down() {
    let clock = Arc::new(ManualClock::new());
    let config = TtlConfig {
        ttl_min: Duration::from_micros(1),
        ..TtlConfig::default()
    };
    let map: TtlMap<u32, ()> = TtlMap::new(config, clock.clone()).unwrap();
    let stamp = map.insert(1, (), Duration::from_micros(1500)).unwrap();
    assert_eq!(stamp.deadline, MonoTime::from_millis(2));
}

#[test]
fn full_map_refuses_with_its_scope_and_evicts_nothing() {
    let (clock, map) = map_with(3);
    for k in 0..3 {
        map.insert(k, format!("{k}"), SEC).unwrap();
    }
    assert_eq!(
        (map.insert(9, "x".into(), SEC)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Named("test")))
    );
    for k in 0..3 {
        assert_eq!(map.get(&k).unwrap().0, format!("{k}"));
    }
    assert_eq!(map.admitted(), 3);
    map.remove(&0).unwrap();
    map.insert(9, "x".into(), SEC).unwrap();
    // Expired entries stop blocking admission once swept.
    clock.advance(SEC);
    assert!(map.insert(10, "y".into(), SEC).is_err());
    assert_eq!(map.sweep().len(), 3);
    map.insert(10, "y".into(), SEC).unwrap();
}

#[test]
fn sweep_order_is_deadline_then_key() {
    let (clock, map) = map_with(100);
    for (k, ttl) in [(5, 30), (3, 20), (9, 20), (1, 30), (4, 10)] {
        map.insert(k, String::new(), ms(ttl)).unwrap();
    }
    clock.advance(ms(30));
    let order: Vec<u32> = map.sweep().into_iter().map(|r| r.key).collect();
    assert_eq!(order, vec![4, 3, 9, 1, 5]);
}

#[test]
fn same_operations_and_readings_give_the_same_results() {
    fn run() -> Vec<(u32, u64, u64)> {
        let (clock, map) = map_with(1000);
        let mut log = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for step in 0..3000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x % 97) as u32;
            let ttl = ms(10 + x % 500);
            match step % 5 {
                0 | 1 => {
                    let _ = map.insert(key, String::new(), ttl);
                }
                2 => {
                    let _ = map.renew(&key, ttl);
                }
                3 => {
                    let _ = map.remove(&key);
                }
                _ => {
                    clock.advance(ms(x % 40));
                    for r in map.sweep() {
                        log.push((r.key, r.stamp.version, r.stamp.deadline.as_millis()));
                    }
                }
            }
        }
        log
    }
    let first = run();
    assert!(first.len() > 100, "the workload expires things");
    assert_eq!(first, run());
}

#[test]
fn invalid_configs_are_refused() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    for config in [
        TtlConfig {
            ttl_min: Duration::ZERO,
            ..TtlConfig::default()
        },
        TtlConfig {
            ttl_min: SEC * 2,
            ttl_max: SEC,
            ..TtlConfig::default()
        },
        TtlConfig {
            entries_max: 0,
            ..TtlConfig::default()
        },
    ] {
        assert!(matches!(
            TtlMap::<u32, ()>::new(config, clock.clone()),
            Err(Error::InvalidArgument { .. })
        ));
    }
}

#[test]
fn concurrent_inserts_never_exceed_the_ceiling() {
    let (_clock, map) = map_with(500);
    let map = Arc::new(map);
    let admitted: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u32)
            .map(|t| {
                let map = &map;
                s.spawn(move || {
                    (0..1000u32)
                        .filter(|i| map.insert(t * 1000 + i, String::new(), SEC).is_ok())
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(admitted, 500);
    assert_eq!(
        (map.len(), map.admitted(), map.scheduled()),
        (500, 500, 500)
    );
}

#[test]
fn concurrent_renewals_of_one_key_all_get_distinct_versions() {
    let (_clock, map) = map_with(10);
    map.insert(1, String::new(), SEC).unwrap();
    let versions: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let map = &map;
                s.spawn(move || {
                    (0..2000)
                        .filter_map(|_| map.renew(&1, SEC).ok())
                        .map(|s| s.version)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut sorted = versions.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        versions.len(),
        "a version was handed out twice"
    );
    assert_eq!(map.stamp(&1).unwrap().version, *sorted.last().unwrap());
}
