//! The timing wheel against a `BTreeMap` oracle.
//!
//! Random inserts, cancels, reschedules (earlier and later), far deadlines
//! beyond the top level, and advances of every size. The wheel must return
//! exactly what the oracle says is due, in the oracle's `(due, item)` order:
//! never early, and at the first advance that reaches the deadline.
//!
//! The same for a [`ByKey`] wheel, driven as a slab table drives it: the
//! oracle plays the records (each item's one live due), settles every
//! fired entry and answers the compaction's questions.

use proptest::prelude::*;
use relaystore::wheel::{ByKey, Fired, TimerHandle, Wheel, COMPACT_MIN};
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone)]
enum Op {
    Insert { delay: u64 },
    Cancel { pick: usize },
    Reschedule { pick: usize, delay: u64 },
    Advance { by: u64 },
}

/// Delays that hit every level of a 3-level wheel (64^3 = 262,144 ticks)
/// and well beyond it, so the overflow list is exercised.
fn delay() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..64,
        3 => 64u64..4096,
        2 => 4096u64..262_144,
        1 => 262_144u64..5_000_000,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => delay().prop_map(|delay| Op::Insert { delay }),
        1 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        2 => (any::<usize>(), delay()).prop_map(|(pick, delay)| Op::Reschedule { pick, delay }),
        3 => delay().prop_map(|by| Op::Advance { by }),
    ]
}

/// Takes every entry due at or before `now` out of the oracle, in order.
fn take_due(oracle: &mut BTreeMap<(u64, u32), ()>, now: u64) -> Vec<(u64, u32)> {
    let mut due = Vec::new();
    while let Some((&(at, id), _)) = oracle.first_key_value() {
        if at > now {
            break;
        }
        oracle.pop_first();
        due.push((at, id));
    }
    due
}

fn check(levels: usize, start: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut wheel = Wheel::with_levels(levels, start);
    let mut oracle: BTreeMap<(u64, u32), ()> = BTreeMap::new();
    let mut live: HashMap<u32, (TimerHandle, u64)> = HashMap::new();
    let mut ids: Vec<u32> = Vec::new();
    let mut next_id = 0u32;
    let mut now = start;
    let mut out: Vec<Fired<u32>> = Vec::new();
    for op in ops {
        match *op {
            Op::Insert { delay } => {
                let id = next_id;
                next_id += 1;
                let due = now + delay;
                let handle = wheel.insert(id, due);
                oracle.insert((due, id), ());
                live.insert(id, (handle, due));
                ids.push(id);
            }
            Op::Cancel { pick } if !ids.is_empty() => {
                let id = ids.swap_remove(pick % ids.len());
                let (handle, due) = live.remove(&id).unwrap();
                prop_assert!(wheel.cancel(handle));
                prop_assert!(!wheel.cancel(handle), "double cancel");
                oracle.remove(&(due, id));
            }
            Op::Reschedule { pick, delay } if !ids.is_empty() => {
                let id = ids[pick % ids.len()];
                let (handle, old) = live[&id];
                // Half the reschedules move a timer earlier, half later.
                let due = if pick % 2 == 0 {
                    now + delay / 8
                } else {
                    now + delay
                };
                prop_assert!(wheel.cancel(handle));
                let handle = wheel.insert(id, due);
                oracle.remove(&(old, id));
                oracle.insert((due, id), ());
                live.insert(id, (handle, due));
            }
            Op::Advance { by } => {
                now += by;
                out.clear();
                wheel.advance(now, &mut out);
                let expected = take_due(&mut oracle, now);
                let got: Vec<(u64, u32)> = out.iter().map(|f| (f.due, f.item)).collect();
                prop_assert_eq!(&got, &expected, "advance to {}", now);
                for f in &out {
                    prop_assert!(f.due <= now, "fired early");
                    let (handle, _) = live.remove(&f.item).unwrap();
                    prop_assert_eq!(handle, f.handle);
                    prop_assert!(!wheel.cancel(handle), "fired handle is stale");
                    ids.retain(|&i| i != f.item);
                }
            }
            _ => {}
        }
        prop_assert_eq!(wheel.len(), oracle.len());
        prop_assert!(wheel.stale() <= 2 * wheel.len().max(COMPACT_MIN));
    }
    // Drain: everything left fires, in oracle order, by the last deadline.
    let rest: Vec<(u64, u32)> = oracle.keys().copied().collect();
    if let Some(&(last, _)) = rest.last() {
        out.clear();
        wheel.advance(last, &mut out);
        let got: Vec<(u64, u32)> = out.iter().map(|f| (f.due, f.item)).collect();
        prop_assert_eq!(got, rest);
    }
    prop_assert!(wheel.is_empty());
    Ok(())
}

/// The [`ByKey`] wheel against the oracle. A cancel or a reschedule
/// forgets the item's entry; a reschedule to the same tick leaves two
/// entries the records cannot tell apart, and settling must still count
/// one live and one stale.
fn check_by_key(levels: usize, start: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut wheel: Wheel<u32, ByKey> = Wheel::by_key_with_levels(levels, start);
    let mut oracle: BTreeMap<(u64, u32), ()> = BTreeMap::new();
    // The records: each item's live due.
    let mut records: HashMap<u32, u64> = HashMap::new();
    let mut ids: Vec<u32> = Vec::new();
    let mut next_id = 0u32;
    let mut now = start;
    let mut out: Vec<Fired<u32, ByKey>> = Vec::new();
    // The latest tick anything was scheduled at, stale or not.
    let mut last = start;
    for op in ops {
        match *op {
            Op::Insert { delay } => {
                let id = next_id;
                next_id += 1;
                wheel.schedule(id, now + delay);
                last = last.max(now + delay);
                oracle.insert((now + delay, id), ());
                records.insert(id, now + delay);
                ids.push(id);
            }
            Op::Cancel { pick } if !ids.is_empty() => {
                let id = ids.swap_remove(pick % ids.len());
                let due = records.remove(&id).unwrap();
                wheel.forget();
                oracle.remove(&(due, id));
            }
            Op::Reschedule { pick, delay } if !ids.is_empty() => {
                let id = ids[pick % ids.len()];
                let old = records[&id];
                // A quarter of the reschedules land on the tick they had.
                let due = match pick % 4 {
                    0 => old.max(now),
                    1 => now + delay / 8,
                    _ => now + delay,
                };
                wheel.forget();
                wheel.schedule(id, due);
                last = last.max(due);
                oracle.remove(&(old, id));
                oracle.insert((due, id), ());
                records.insert(id, due);
            }
            Op::Advance { by } => {
                now += by;
                out.clear();
                wheel.advance(now, &mut out);
                let expected = take_due(&mut oracle, now);
                let mut got = Vec::new();
                for f in &out {
                    prop_assert!(f.due <= now, "fired early");
                    let live = records.get(&f.item) == Some(&f.due);
                    if live {
                        records.remove(&f.item);
                        ids.retain(|&i| i != f.item);
                        got.push((f.due, f.item));
                    }
                    wheel.settle(live);
                }
                prop_assert_eq!(&got, &expected, "advance to {}", now);
            }
            _ => {}
        }
        wheel.tidy(usize::MAX, |item, due| records.get(item) == Some(&due));
        prop_assert_eq!(wheel.len(), oracle.len());
        prop_assert!(wheel.stale() <= wheel.unfound() + 2 * wheel.len().max(COMPACT_MIN));
    }
    // Drain to the last tick anything was scheduled at: the live entries
    // fire in oracle order, and every stale one still held fires too.
    let rest: Vec<(u64, u32)> = oracle.keys().copied().collect();
    out.clear();
    wheel.advance(last, &mut out);
    let mut got = Vec::new();
    for f in &out {
        let live = records.get(&f.item) == Some(&f.due);
        if live {
            records.remove(&f.item);
            got.push((f.due, f.item));
        }
        wheel.settle(live);
    }
    prop_assert_eq!(got, rest);
    prop_assert!(wheel.is_empty());
    prop_assert_eq!(
        wheel.stale(),
        0,
        "every forgotten entry fired or was dropped"
    );
    Ok(())
}

proptest! {
    // A fixed seed unless `PROPTEST_RNG_SEED` is set: every run tries the
    // same sequences.
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: match std::env::var_os("PROPTEST_RNG_SEED") {
            Some(_) => ProptestConfig::default().rng_seed,
            None => proptest::test_runner::RngSeed::Fixed(0x3EE1),
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn three_level_wheel_matches_oracle(start in 0u64..1_000_000, ops in prop::collection::vec(op(), 1..300)) {
        check(3, start, &ops)?;
    }

    #[test]
    fn default_wheel_matches_oracle(start in 0u64..(1 << 40), ops in prop::collection::vec(op(), 1..300)) {
        check(relaystore::wheel::DEFAULT_LEVELS, start, &ops)?;
    }

    #[test]
    fn one_level_wheel_matches_oracle(ops in prop::collection::vec(op(), 1..200)) {
        check(1, 0, &ops)?;
    }

    #[test]
    fn three_level_by_key_wheel_matches_oracle(start in 0u64..1_000_000, ops in prop::collection::vec(op(), 1..300)) {
        check_by_key(3, start, &ops)?;
    }

    #[test]
    fn default_by_key_wheel_matches_oracle(start in 0u64..(1 << 40), ops in prop::collection::vec(op(), 1..300)) {
        check_by_key(relaystore::wheel::DEFAULT_LEVELS, start, &ops)?;
    }
}

#[test]
fn overdue_insert_fires_on_the_next_advance() {
    let mut wheel = Wheel::new(1000);
    wheel.insert(1u32, 500);
    let mut out = Vec::new();
    wheel.advance(1000, &mut out);
    assert_eq!(
        out.iter().map(|f| (f.item, f.due)).collect::<Vec<_>>(),
        vec![(1, 500)]
    );
}

#[test]
fn ties_fire_in_item_order_whatever_the_insertion_order() {
    let mut wheel = Wheel::new(0);
    for item in [7u32, 3, 9, 1] {
        wheel.insert(item, 100_000); // cascades from level 2
    }
    for item in [8u32, 2] {
        wheel.insert(item, 100_000);
    }
    let mut out = Vec::new();
    wheel.advance(100_000, &mut out);
    assert_eq!(
        out.iter().map(|f| f.item).collect::<Vec<_>>(),
        vec![1, 2, 3, 7, 8, 9]
    );
}

#[test]
fn next_due_reports_the_earliest_work() {
    let mut wheel = Wheel::new(0);
    assert_eq!(wheel.next_due(), None);
    wheel.insert(1u32, 70);
    // 70 sits on level 1: the wheel has work (a cascade) at its slot start.
    assert_eq!(wheel.next_due(), Some(64));
    let mut out = Vec::new();
    wheel.advance(64, &mut out);
    assert!(out.is_empty());
    assert_eq!(wheel.next_due(), Some(70));
}

/// Due ticks spread over 1..=300,000 by a fixed xorshift sequence.
fn scattered_dues() -> impl Iterator<Item = u64> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        1 + x % 300_000
    })
}

/// Cancels, through `cancel(i)`, the 18,000 of 20,000 entries whose
/// index is not a multiple of ten; `cancel` returns the wheel's stale
/// count before and after and its live count after. Compaction is
/// incremental: one cancel drops at most a step's worth of stale entries
/// (a whole-wheel pass drops them all), and stale entries stay within
/// twice the live ones.
fn cancel_nine_in_ten(mut cancel: impl FnMut(usize) -> (usize, usize, usize)) {
    use relaystore::wheel::COMPACT_STEP;
    let (mut max_stale, mut dropped) = (0, 0);
    for i in (0..20_000).filter(|i| i % 10 != 0) {
        let (before, stale, len) = cancel(i);
        let dropped_now = (before + 1).saturating_sub(stale);
        assert!(
            dropped_now <= COMPACT_STEP,
            "cancel {i} dropped {dropped_now} stale entries at once"
        );
        dropped += dropped_now;
        max_stale = max_stale.max(stale);
        assert!(stale <= 2 * len.max(COMPACT_MIN));
    }
    assert!(max_stale >= COMPACT_MIN, "compaction never triggered");
    assert!(
        dropped >= 9 * COMPACT_MIN,
        "compaction dropped only {dropped} stale entries"
    );
}

#[test]
fn mass_cancellation_compacts_and_keeps_exact_order() {
    let mut wheel = Wheel::new(0);
    let mut oracle = BTreeMap::new();
    let mut handles = Vec::new();
    for (id, due) in (0..20_000u32).zip(scattered_dues()) {
        handles.push((wheel.insert(id, due), due, id));
        oracle.insert((due, id), ());
    }
    cancel_nine_in_ten(|i| {
        let (handle, due, id) = handles[i];
        let before = wheel.stale();
        assert!(wheel.cancel(handle));
        oracle.remove(&(due, id));
        (before, wheel.stale(), wheel.len())
    });
    assert_eq!(wheel.len(), 2_000);
    let mut out = Vec::new();
    wheel.advance(300_000, &mut out);
    let got: Vec<(u64, u32)> = out.iter().map(|f| (f.due, f.item)).collect();
    let expected: Vec<(u64, u32)> = oracle.keys().copied().collect();
    assert_eq!(got, expected);
    assert_eq!((wheel.len(), wheel.stale()), (0, 0));
}

/// Fires can shrink `len` under a compaction pass; the next cancel then
/// compacts whole, so stale entries stay within twice the live ones.
#[test]
fn stale_entries_stay_bounded_when_fires_shrink_the_live_count() {
    use relaystore::wheel::COMPACT_MIN;
    let mut wheel = Wheel::new(0);
    let n = 8 * COMPACT_MIN as u32;
    // Half due soon, half late; cancel most of the late ones.
    let handles: Vec<_> = (0..n)
        .map(|id| {
            let due = if id % 2 == 0 { 10 } else { 1_000_000 };
            wheel.insert(id, due)
        })
        .collect();
    for (id, &h) in handles.iter().enumerate() {
        if id % 2 == 1 && id % 16 != 1 {
            assert!(wheel.cancel(h));
        }
    }
    let mut out = Vec::new();
    wheel.advance(10, &mut out);
    assert_eq!(out.len(), n as usize / 2);
    // Every early entry fired: few live entries, many stale ones.
    let late_live: Vec<_> = handles
        .iter()
        .enumerate()
        .filter(|&(id, _)| id % 16 == 1)
        .map(|(_, &h)| h)
        .collect();
    for &h in &late_live[..2] {
        assert!(wheel.cancel(h));
        assert!(
            wheel.stale() <= 2 * wheel.len().max(COMPACT_MIN),
            "stale {} against live {}",
            wheel.stale(),
            wheel.len()
        );
    }
    out.clear();
    wheel.advance(1_000_000, &mut out);
    assert_eq!(out.len(), late_live.len() - 2);
    assert_eq!((wheel.len(), wheel.stale()), (0, 0));
}

/// [`ByKey`]: the same mass cancellation, the records answering the
/// compaction's questions. Steps stay small, stale entries bounded, and
/// the order exact.
#[test]
fn by_key_mass_forgetting_compacts_by_asking_the_records() {
    let mut wheel: Wheel<u32, ByKey> = Wheel::by_key(0);
    let mut records: HashMap<u32, u64> = HashMap::new();
    for (id, due) in (0..20_000u32).zip(scattered_dues()) {
        wheel.schedule(id, due);
        records.insert(id, due);
    }
    cancel_nine_in_ten(|i| {
        let before = wheel.stale();
        records.remove(&(i as u32));
        wheel.forget();
        wheel.tidy(usize::MAX, |item, due| records.get(item) == Some(&due));
        (before, wheel.stale(), wheel.len())
    });
    assert_eq!(wheel.unfound(), 0, "nothing was in flight or doubled");
    assert_eq!(wheel.len(), 2_000);
    let mut out = Vec::new();
    wheel.advance(300_000, &mut out);
    let mut expected: Vec<(u64, u32)> = records.iter().map(|(&id, &due)| (due, id)).collect();
    expected.sort_unstable();
    let mut got = Vec::new();
    for f in &out {
        let live = records.get(&f.item) == Some(&f.due);
        if live {
            got.push((f.due, f.item));
        }
        wheel.settle(live);
    }
    assert_eq!(got, expected);
    assert_eq!((wheel.len(), wheel.stale()), (0, 0));
}

/// A forgotten entry whose item was scheduled again at the same tick
/// looks live to every pass. Thousands of them must not make each forget
/// pay for a whole pass: once a pass has ended, they count as unfound,
/// and the next pass waits for as many new forgets as live entries.
#[test]
fn by_key_entries_no_pass_can_find_do_not_make_every_forget_a_whole_pass() {
    use relaystore::wheel::COMPACT_STEP;
    let mut wheel: Wheel<u32, ByKey> = Wheel::by_key(0);
    let mut records: HashMap<u32, u64> = HashMap::new();
    let doubled = 3 * COMPACT_MIN as u32;
    for id in 0..doubled {
        wheel.schedule(id, 500_000);
        records.insert(id, 500_000);
        // Forgotten and scheduled again at the same tick.
        wheel.forget();
        wheel.schedule(id, 500_000);
        wheel.tidy(usize::MAX, |item, due| records.get(item) == Some(&due));
    }
    assert_eq!(
        (wheel.len(), wheel.stale()),
        (doubled as usize, doubled as usize)
    );
    assert!(
        wheel.unfound() >= COMPACT_MIN,
        "passes ended without finding them, yet only {} count as unfound",
        wheel.unfound()
    );
    // Ordinary records come and go; each forget examines a step at most.
    for id in doubled..doubled + 4 * COMPACT_MIN as u32 {
        wheel.schedule(id, 600_000);
        records.insert(id, 600_000);
    }
    for id in doubled..doubled + 4 * COMPACT_MIN as u32 {
        let before = wheel.stale();
        records.remove(&id);
        wheel.forget();
        wheel.tidy(usize::MAX, |item, due| records.get(item) == Some(&due));
        assert!(
            (before + 1).saturating_sub(wheel.stale()) <= COMPACT_STEP,
            "forget of {id} ran a whole pass"
        );
        assert!(wheel.stale() <= wheel.unfound() + 2 * wheel.len().max(COMPACT_MIN));
    }
    // At their tick, each doubled pair settles one live and one stale.
    let mut out = Vec::new();
    wheel.advance(600_000, &mut out);
    let mut live_fired = 0;
    for f in &out {
        let live = records.get(&f.item) == Some(&f.due);
        if live {
            records.remove(&f.item);
            live_fired += 1;
        }
        wheel.settle(live);
    }
    assert_eq!(live_fired, doubled);
    assert_eq!((wheel.len(), wheel.stale(), wheel.unfound()), (0, 0, 0));
}

/// On a hot path a [`ByKey`] wheel's caller pays only whole passes
/// (`tidy_urgent`), and only past the hard bound; the steps wait for a
/// `tidy` elsewhere, which pays them a capped number of entries at a time.
#[test]
fn by_key_hot_paths_pay_only_the_hard_bound_and_tidy_pays_the_steps() {
    let mut wheel: Wheel<u32, ByKey> = Wheel::by_key(0);
    let mut records: HashMap<u32, u64> = HashMap::new();
    let n = 4 * COMPACT_MIN as u32;
    for id in 0..n {
        wheel.schedule(id, 1_000 + u64::from(id));
        records.insert(id, 1_000 + u64::from(id));
    }
    let mut whole_passes = 0;
    for id in 0..n - 8 {
        let before = wheel.stale();
        records.remove(&id);
        wheel.forget();
        wheel.tidy_urgent(|item, due| records.get(item) == Some(&due));
        let dropped = (before + 1).saturating_sub(wheel.stale());
        if dropped > 0 {
            whole_passes += 1;
            assert_eq!(wheel.stale(), 0, "a whole pass finds every forgotten entry");
        }
        assert!(wheel.stale() <= 2 * wheel.len().max(COMPACT_MIN));
    }
    assert!(whole_passes >= 1, "the hard bound was never reached");
    // Steps are owed now; a capped tidy pays some, repeated ones the rest.
    let stale = wheel.stale();
    assert!(stale > 0);
    let owed = wheel.tidy(16, |item, due| records.get(item) == Some(&due));
    assert!(owed, "16 entries cannot pay a pass");
    assert!(stale - wheel.stale() <= 16);
    while wheel.tidy(16, |item, due| records.get(item) == Some(&due)) {}
    assert!(wheel.stale() < stale, "the steps dropped nothing");
}
