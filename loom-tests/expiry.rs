//! Loom model: a renewal racing the expiry sweep.
//!
//! The record (deadline 10) is renewed by a caller whose clock read 9 while
//! the sweep runs at 12. Either the renewal wins (the record stays, with the
//! new deadline, rescheduled in the wheel) or the sweep wins (the record is
//! gone and the renewal says so). Never both, never neither, and the
//! record, admission and wheel counts always agree.
#![cfg(relaystore_loom)]

#[path = "common.rs"]
mod common;

use loom::sync::Arc;
use loom::thread;
use relaystore::model::faults::{store_fault, StoreFault};
use relaystore::model::{ModelSlabTable, ModelTable};
use relaystore::Error;

fn renew_vs_sweep(broken: bool) {
    common::explore(
        if broken {
            "renew_vs_sweep (broken)"
        } else {
            "renew_vs_sweep"
        },
        move || {
            let table = Arc::new(ModelTable::new(4));
            table.insert(1, 0, 10).unwrap();
            let renewer = {
                let table = Arc::clone(&table);
                thread::spawn(move || table.renew(1, 9, 19))
            };
            let swept = if broken {
                table.sweep_check_then_act(1, 12)
            } else {
                table.sweep(12)
            };
            let renewed = renewer.join().unwrap();
            let held = table.held(1);
            match renewed {
                Ok(stamp) => {
                    assert!(swept.is_empty(), "a successful renewal was swept away");
                    assert_eq!(held, Some(stamp));
                    assert_eq!(table.counts(), (1, 1, 1));
                }
                Err(e) => {
                    assert_eq!(e, Error::NotFound);
                    assert_eq!(swept, vec![1]);
                    assert_eq!(held, None);
                    assert_eq!(table.counts(), (0, 0, 0));
                }
            }
        },
    );
}

#[test]
fn renewal_and_sweep_never_both_win() {
    renew_vs_sweep(false);
}

#[test]
#[should_panic(expected = "a successful renewal was swept away")]
fn broken_twin_check_then_act_sweep_loses_a_renewal() {
    renew_vs_sweep(true);
}

/// A record re-created under its key between two of the sweep's batches
/// (the sweep handles one fired entry per hold of the wheel lock here):
/// the old record's batch finds its entry no longer the record's and
/// leaves the new record alone, with exactly one wheel entry.
fn recreate_between_batches(fault: StoreFault) {
    let label = if fault == StoreFault::None {
        "recreate_between_batches".to_string()
    } else {
        format!("recreate_between_batches ({fault:?})")
    };
    common::explore(&label, move || {
        store_fault(fault);
        let table = Arc::new(ModelTable::new(4));
        table.insert(1, 0, 10).unwrap();
        table.insert(2, 0, 10).unwrap();
        let creator = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                // Key 2 expired at 10: the insert replaces it.
                table.insert(2, 12, 30).unwrap()
            })
        };
        let swept = table.sweep(12);
        let created = creator.join().unwrap();
        assert!(swept.contains(&1), "the expired record 1 was not swept");
        assert_eq!(table.held(2), Some(created), "the new record 2 is gone");
        assert_eq!(
            table.counts(),
            (1, 1, 1),
            "records, admissions and wheel entries disagree"
        );
    });
}

#[test]
fn a_record_recreated_between_sweep_batches_keeps_one_timer() {
    recreate_between_batches(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_sweep_ignoring_the_handle_doubles_a_timer() {
    recreate_between_batches(StoreFault::SweepIgnoresHandle);
}

/// A slab record's deadline pulled in (its entry forgotten, a new one
/// scheduled) and then extended, racing a sweep that may fire the new
/// entry in between. Either the sweep removed the record (pulled-in and
/// expired) or it lives on; in both cases, once a last sweep has passed
/// the old entry's tick, the record, live-entry and stale-entry counts
/// are exact: the forgotten entry settled stale, never rescheduled.
fn pull_in_vs_sweep(fault: StoreFault) {
    let label = if fault == StoreFault::None {
        "pull_in_vs_sweep".to_string()
    } else {
        format!("pull_in_vs_sweep ({fault:?})")
    };
    common::explore(&label, move || {
        store_fault(fault);
        let table = Arc::new(ModelSlabTable::new(4));
        let key = table.insert(0, 10).unwrap();
        let sweeper = {
            let table = Arc::clone(&table);
            thread::spawn(move || table.sweep(6))
        };
        let pulled = table.renew(key, 0, 5).is_ok();
        let extended = table.renew(key, 1, 30).is_ok();
        let mut swept = sweeper.join().unwrap();
        assert!(pulled, "nothing could remove the record before the pull-in");
        swept.extend(table.sweep(10));
        if extended {
            assert!(swept.is_empty(), "an extended record was swept");
            assert_eq!(table.counts(), (1, 1, 0), "records, live and stale entries");
        } else {
            assert_eq!(swept, vec![key], "the expired record left once");
            assert_eq!(table.counts(), (0, 0, 0), "records, live and stale entries");
        }
    });
}

#[test]
fn a_slab_records_pulled_in_entry_racing_the_sweep_settles_exactly() {
    pull_in_vs_sweep(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_sweep_ignoring_the_due_reschedules_a_forgotten_entry() {
    pull_in_vs_sweep(StoreFault::SweepIgnoresHandle);
}
