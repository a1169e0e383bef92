//! Loom models of named locks: two try_locks, release vs try_lock, renew vs
//! expiry, stale release vs new holder. Each runs the real `Store` and has a
//! broken twin the model catches.
#![cfg(relaystore_loom)]

#[path = "common.rs"]
mod common;

use loom::thread;
use relaystore::model::faults::{store_fault, StoreFault};
use relaystore::time::ManualClock;
use relaystore::{Error, Store, StoreConfig, TenantId};
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(1);
const SEC: Duration = Duration::from_secs(1);

fn store() -> (Arc<ManualClock>, Arc<Store>) {
    let clock = Arc::new(ManualClock::new());
    let config = StoreConfig::default()
        .subscribers_max(1)
        .subscriber_buffer_max(8);
    (clock.clone(), Arc::new(Store::new(config, clock).unwrap()))
}

fn name(fault: StoreFault, model: &str) -> String {
    if fault == StoreFault::None {
        model.to_string()
    } else {
        format!("{model} ({fault:?})")
    }
}

/// Takes the lock, returning its fence, or `None` if someone else holds it.
fn take(store: &Store, owner: &str, ttl: Duration) -> Option<u64> {
    store
        .try_lock(T, "L", owner, ttl, None)
        .unwrap()
        .map(|g| g.fence())
}

/// Two `try_lock`s on a free name: exactly one `Some`, and the holder shown
/// afterwards is the winner.
fn two_try_locks(fault: StoreFault) {
    common::explore(&name(fault, "two_try_locks"), move || {
        store_fault(fault);
        let (_clock, store) = store();
        let other = {
            let store = Arc::clone(&store);
            thread::spawn(move || take(&store, "b", SEC))
        };
        let mine = take(&store, "a", SEC);
        let theirs = other.join().unwrap();
        let winners: Vec<u64> = [mine, theirs].into_iter().flatten().collect();
        assert_eq!(
            winners.len(),
            1,
            "exactly one try_lock wins: {mine:?} {theirs:?}"
        );
        assert_eq!(store.get_lock(T, "L").unwrap().fence, winners[0]);
    });
}

/// The holder's lock has lapsed (unswept); its release races another owner's
/// `try_lock`. If the other owner got the lock, it still holds it after the
/// release: the release removes only its own fence.
fn release_vs_try_lock(fault: StoreFault) {
    common::explore(&name(fault, "release_vs_try_lock"), move || {
        store_fault(fault);
        let (clock, store) = store();
        let old = take(&store, "a", SEC).unwrap();
        clock.advance(SEC);
        let releaser = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.release_lock(T, "L", old))
        };
        let new = take(&store, "b", SEC * 10);
        releaser.join().unwrap().unwrap();
        if let Some(fence) = new {
            assert!(fence > old);
            assert_eq!(
                store.get_lock(T, "L").map(|l| l.fence),
                Ok(fence),
                "a stale release freed the new holder's lock"
            );
        }
    });
}

/// A renewal racing time passing the deadline and the sweep. A renewal that
/// read the clock before the deadline succeeds and the lock survives the
/// sweep; one that read it after is refused. Never both.
fn renew_vs_expiry(fault: StoreFault) {
    common::explore(&name(fault, "renew_vs_expiry"), move || {
        store_fault(fault);
        let (clock, store) = store();
        let fence = take(&store, "a", SEC).unwrap();
        let renewer = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.renew_lock(T, "L", fence, SEC * 5))
        };
        clock.advance(SEC);
        store.sweep();
        match renewer.join().unwrap() {
            Ok(_) => {
                // Renewed at 0 to a deadline of 5 s, so 4 s are left at 1 s;
                // a renewal after the lapse would leave 5 s.
                store.sweep();
                assert_eq!(
                    store.get_lock(T, "L").map(|l| (l.fence, l.remaining)),
                    Ok((fence, SEC * 4)),
                    "renewed after the lock lapsed"
                );
            }
            Err(e) => {
                assert!(matches!(e, Error::Expired | Error::NotFound), "{e:?}");
                store.sweep();
                assert_eq!(store.get_lock(T, "L"), Err(Error::NotFound));
            }
        }
    });
}

/// A stale holder's release races the new holder's renewal: the new holder
/// keeps its lock whatever the order.
fn stale_release_vs_new_holder(fault: StoreFault) {
    common::explore(&name(fault, "stale_release_vs_new_holder"), move || {
        store_fault(fault);
        let (clock, store) = store();
        let old = take(&store, "a", SEC).unwrap();
        clock.advance(SEC);
        let new = take(&store, "b", SEC * 10).unwrap();
        let releaser = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.release_lock(T, "L", old))
        };
        let renewed = store.renew_lock(T, "L", new, SEC * 10);
        releaser.join().unwrap().unwrap();
        assert!(renewed.is_ok(), "the new holder lost its lock: {renewed:?}");
        assert_eq!(
            store.get_lock(T, "L").map(|l| l.fence),
            Ok(new),
            "the stale release freed the new holder's lock"
        );
    });
}

#[test]
fn exactly_one_of_two_try_locks_wins() {
    two_try_locks(StoreFault::None);
}

#[test]
#[should_panic(expected = "exactly one try_lock wins")]
fn broken_twin_ignoring_the_holder_lets_both_win() {
    two_try_locks(StoreFault::KeyHolderIgnored);
}

#[test]
fn release_racing_try_lock_never_frees_the_new_holder() {
    release_vs_try_lock(StoreFault::None);
}

#[test]
#[should_panic(expected = "stale release freed")]
fn broken_twin_unfenced_release_racing_try_lock_frees_the_new_holder() {
    release_vs_try_lock(StoreFault::ReleaseUnfenced);
}

#[test]
fn renewal_racing_expiry_either_renews_or_is_refused() {
    renew_vs_expiry(StoreFault::None);
}

#[test]
#[should_panic(expected = "renewed after the lock lapsed")]
fn broken_twin_renewal_ignoring_the_deadline_resurrects_the_lock() {
    renew_vs_expiry(StoreFault::RenewIgnoresDeadline);
}

#[test]
fn stale_release_racing_the_new_holder_keeps_its_lock() {
    stale_release_vs_new_holder(StoreFault::None);
}

#[test]
#[should_panic(expected = "new holder")]
fn broken_twin_unfenced_release_frees_the_new_holder() {
    stale_release_vs_new_holder(StoreFault::ReleaseUnfenced);
}
