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
use relaystore::model::ModelTable;
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
