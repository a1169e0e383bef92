//! Loom models: admission counters under contention, and the word
//! snapshot the limits they check are read from.
#![cfg(relaystore_loom)]

#[path = "common.rs"]
mod common;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use relaystore::model::{faults, Counter, ModelWords, Reservation};
use relaystore::Scope;

/// Two threads acquire and release the last unit: never two holders, never
/// above the ceiling, nothing leaked at the end.
fn last_unit(broken: bool) {
    common::explore(
        if broken {
            "last_unit (broken)"
        } else {
            "last_unit"
        },
        move || {
            faults::blind_store(broken);
            let counter = Arc::new(Counter::new(Scope::Named("model"), 1));
            let holders = Arc::new(AtomicUsize::new(0));
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let counter = Arc::clone(&counter);
                    let holders = Arc::clone(&holders);
                    thread::spawn(move || {
                        if counter.try_acquire(1) {
                            let now_holding = holders.fetch_add(1, Ordering::SeqCst) + 1;
                            assert!(now_holding <= 1, "two holders of a one-unit ceiling");
                            assert!(counter.used() <= counter.limit());
                            holders.fetch_sub(1, Ordering::SeqCst);
                            counter.release(1);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(counter.used(), 0, "units leaked");
        },
    );
}

/// A two-scope reservation races a one-scope reservation for the shared
/// scope: a refused reservation leaves its other scope untouched, and the
/// counts equal what the winners hold.
fn all_or_nothing(broken: bool) {
    common::explore(
        if broken {
            "all_or_nothing (broken)"
        } else {
            "all_or_nothing"
        },
        move || {
            faults::blind_store(broken);
            let a = Arc::new(Counter::new(Scope::Named("model"), 1));
            let b = Arc::new(Counter::new(Scope::Named("model"), 1));
            let both = {
                let (a, b) = (Arc::clone(&a), Arc::clone(&b));
                thread::spawn(move || match Reservation::acquire(&[(&a, 1), (&b, 1)]) {
                    Ok(r) => {
                        r.commit();
                        true
                    }
                    Err(_) => false,
                })
            };
            let only_b = match Reservation::acquire(&[(&b, 1)]) {
                Ok(r) => {
                    r.commit();
                    true
                }
                Err(_) => false,
            };
            let both = both.join().unwrap();
            assert_eq!(
                a.used(),
                u64::from(both),
                "a refused reservation leaked scope a"
            );
            assert_eq!(
                b.used(),
                u64::from(both) + u64::from(only_b),
                "scope b holds exactly what the winners took"
            );
            assert!(b.used() <= 1);
        },
    );
}

#[test]
fn last_unit_never_has_two_holders() {
    last_unit(false);
}

/// The blind store is caught either as two simultaneous holders or, in
/// interleavings where the holders do not overlap, as a release of a unit
/// the counter no longer shows (the counter's underflow assertion).
#[test]
#[should_panic]
fn broken_twin_blind_store_admits_two_holders() {
    last_unit(true);
}

#[test]
fn reservation_is_all_or_nothing_under_contention() {
    all_or_nothing(false);
}

#[test]
#[should_panic(expected = "scope b holds exactly what the winners took")]
fn broken_twin_blind_store_breaks_the_accounting() {
    all_or_nothing(true);
}

/// A read races a replacement of a two-word snapshot: it sees the old
/// value or the new one whole (equal halves), never a mix; a read after
/// the replacement sees the new one. `by_words` reads the words one by one
/// (`read_words`, what a creation does) instead of the whole value.
fn snapshot_read(fault: faults::StoreFault, by_words: bool) {
    let name = match (fault == faults::StoreFault::None, by_words) {
        (true, false) => "snapshot_read",
        (true, true) => "snapshot_read_words",
        (false, false) => "snapshot_read (unchecked)",
        (false, true) => "snapshot_read_words (unchecked)",
    };
    common::explore(name, move || {
        faults::store_fault(fault);
        let snapshot = Arc::new(ModelWords::new(1));
        let writer = {
            let snapshot = Arc::clone(&snapshot);
            thread::spawn(move || snapshot.store(2))
        };
        let read = || {
            if by_words {
                snapshot.read_words()
            } else {
                snapshot.read()
            }
        };
        let (a, b) = read();
        assert_eq!(a, b, "a read mixed two values");
        writer.join().unwrap();
        assert_eq!(read(), (2, 2), "a read after the replacement");
    });
}

#[test]
fn a_snapshot_read_sees_one_value_whole() {
    snapshot_read(faults::StoreFault::None, false);
}

#[test]
#[should_panic(expected = "a read mixed two values")]
fn broken_twin_unchecked_snapshot_read_mixes_two_values() {
    snapshot_read(faults::StoreFault::SnapshotUnchecked, false);
}

#[test]
fn a_snapshot_read_of_words_sees_one_value_whole() {
    snapshot_read(faults::StoreFault::None, true);
}

#[test]
#[should_panic(expected = "a read mixed two values")]
fn broken_twin_unchecked_snapshot_read_of_words_mixes_two_values() {
    snapshot_read(faults::StoreFault::SnapshotUnchecked, true);
}
