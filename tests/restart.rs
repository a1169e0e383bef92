//! Restarts: every fence a new incarnation issues is above every fence an
//! earlier one issued (a fenced resource outlives the store), and a fence
//! or id from an earlier incarnation is refused with `Restarted` and
//! changes nothing (SPEC §2, §7).

mod common;

use common::{A, SEC};
use relaystore::time::{ManualClock, SystemClock};
use relaystore::{Error, Store, StoreConfig};
use std::sync::Arc;
use std::time::Duration;

fn system_store() -> Store {
    Store::new(StoreConfig::default(), Arc::new(SystemClock::new())).unwrap()
}

#[test]
fn a_lock_fence_from_before_a_restart_cannot_touch_the_new_holders_lock() {
    let first = system_store();
    let old = first
        .try_lock(A, "match-42", "worker-a", SEC * 30, None)
        .unwrap()
        .unwrap()
        .fence();
    drop(first);

    let second = system_store();
    let new = second
        .try_lock(A, "match-42", "worker-b", SEC * 30, None)
        .unwrap()
        .unwrap()
        .fence();
    assert!(new > old, "fence {new} after a restart is not above {old}");
    assert_eq!(
        second.renew_lock(A, "match-42", old, SEC * 30),
        Err(Error::Restarted)
    );
    assert_eq!(
        second.release_lock(A, "match-42", old),
        Err(Error::Restarted)
    );
    let held = second.get_lock(A, "match-42").unwrap();
    assert_eq!((held.holder.as_ref(), held.fence), ("worker-b", new));
}

#[test]
fn lease_fences_keep_rising_across_restarts() {
    let first = system_store();
    let old = first.grant(A, "host-a", SEC * 30, None).unwrap();
    drop(first);
    let second = system_store();
    let new = second.grant(A, "host-b", SEC * 30, None).unwrap();
    assert!(new.fence > old.fence, "{} then {}", old.fence, new.fence);
    assert_eq!(second.renew(A, old.id, SEC), Err(Error::Restarted));
    assert_eq!(second.revoke(A, old.id), Err(Error::Restarted));
}

#[test]
fn a_host_supplied_fence_floor_holds_when_the_wall_clock_went_back() {
    // The first incarnation ran with a wall clock an hour ahead; the second
    // starts with it corrected. The host persisted the highest fence it
    // handed to its resources and passes it as the floor.
    let ahead = Arc::new(ManualClock::new());
    ahead.jump_wall_forward(Duration::from_secs(3600));
    let first = Store::new(StoreConfig::default(), ahead).unwrap();
    let old = first
        .try_lock(A, "match-42", "worker-a", SEC * 30, None)
        .unwrap()
        .unwrap()
        .fence();
    drop(first);

    let second = Store::new(
        StoreConfig::default().fence_floor(old),
        Arc::new(ManualClock::new()),
    )
    .unwrap();
    let new = second
        .try_lock(A, "match-42", "worker-b", SEC * 30, None)
        .unwrap()
        .unwrap()
        .fence();
    assert!(new > old);
    assert_eq!(
        second.release_lock(A, "match-42", old),
        Err(Error::Restarted)
    );
    assert!(second.get_lock(A, "match-42").is_ok());
}

#[test]
fn ids_carry_a_64_bit_incarnation() {
    let a = system_store().grant(A, "h", SEC, None).unwrap().id;
    let b = system_store().grant(A, "h", SEC, None).unwrap().id;
    let incarnation = |bits: u128| (bits >> 64) as u64;
    assert_ne!(incarnation(a.to_bits()), incarnation(b.to_bits()));
    // Not confined to 32 bits: across a few stores some incarnation uses
    // the high half (one in 2^32 chance per store of a false failure).
    let high = (0..4).any(|_| {
        let id = system_store().grant(A, "h", SEC, None).unwrap().id;
        incarnation(id.to_bits()) >> 32 != 0
    });
    assert!(high, "incarnations fit in 32 bits");
}
