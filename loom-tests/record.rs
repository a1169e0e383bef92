//! Loom models: writers racing compare-and-swap transitions on one record.
//!
//! Run with `RUSTFLAGS="--cfg relaystore_loom"`; see `loom-tests/README.md`.
#![cfg(relaystore_loom)]

#[path = "common.rs"]
mod common;

use loom::sync::Arc;
use loom::thread;
use relaystore::model::{faults, ModelRecord};
use relaystore::{ConflictReason, Error};

/// Two writers CAS the same record at the same expected version: exactly one
/// wins, the loser learns the winner's version, the version strictly grew.
fn same_version_race(broken: bool) {
    common::explore(
        if broken {
            "same_version_race (broken)"
        } else {
            "same_version_race"
        },
        move || {
            faults::blind_store(broken);
            let record = Arc::new(ModelRecord::new(1, 1000));
            let v0 = record.stamp().version;
            let writers: Vec<_> = [2000u64, 3000]
                .into_iter()
                .map(|deadline| {
                    let record = Arc::clone(&record);
                    thread::spawn(move || record.set_deadline(v0, deadline))
                })
                .collect();
            let results: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
            let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
            assert_eq!(
                winners.len(),
                1,
                "exactly one CAS at v{v0} wins: {results:?}"
            );
            let winner = *winners[0];
            assert!(winner.version > v0);
            assert!(results.contains(&Err(Error::Conflict {
                reason: ConflictReason::Version,
                current_version: winner.version
            })));
            assert_eq!(record.stamp(), winner, "the winner's write is what stays");
        },
    );
}

/// Two writers renew without an expected version: both succeed (a lost CAS
/// is retried), with distinct versions, and the record ends two versions on.
fn retrying_writers(broken: bool) {
    common::explore(
        if broken {
            "retrying_writers (broken)"
        } else {
            "retrying_writers"
        },
        move || {
            faults::blind_store(broken);
            let record = Arc::new(ModelRecord::new(1, 1000));
            let v0 = record.stamp().version;
            let writers: Vec<_> = [2000u64, 3000]
                .into_iter()
                .map(|deadline| {
                    let record = Arc::clone(&record);
                    thread::spawn(move || record.set_deadline_any(deadline).unwrap())
                })
                .collect();
            let mut versions: Vec<u64> = writers
                .into_iter()
                .map(|w| w.join().unwrap().version)
                .collect();
            versions.sort_unstable();
            assert_eq!(versions, vec![v0 + 1, v0 + 2], "versions strictly increase");
            assert_eq!(record.stamp().version, v0 + 2);
        },
    );
}

#[test]
fn exactly_one_of_two_writers_at_one_version_wins() {
    same_version_race(false);
}

#[test]
#[should_panic(expected = "exactly one CAS")]
fn broken_twin_blind_store_lets_both_writers_win() {
    same_version_race(true);
}

#[test]
fn retrying_writers_get_distinct_increasing_versions() {
    retrying_writers(false);
}

#[test]
#[should_panic(expected = "versions strictly increase")]
fn broken_twin_blind_store_hands_out_one_version_twice() {
    retrying_writers(true);
}
