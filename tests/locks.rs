//! Named locks on a `ManualClock`, plus an 8-thread contention run.

use relaystore::events::{Cause, Collection, Received};
use relaystore::time::ManualClock;
use relaystore::{Error, Scope, Store, StoreConfig, TenantId, TenantQuota};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(3);
const SEC: Duration = Duration::from_secs(1);

fn store_with(config: StoreConfig) -> (Arc<ManualClock>, Store) {
    let clock = Arc::new(ManualClock::new());
    (clock.clone(), Store::new(config, clock).unwrap())
}

fn store() -> (Arc<ManualClock>, Store) {
    store_with(StoreConfig::default().ttl_min(Duration::from_millis(10)))
}

#[test]
fn invalid_names_and_ttls_are_refused_with_their_error() {
    let (_c, s) = store();
    assert_eq!(
        s.try_lock(T, "", "w", SEC, None).err(),
        Some(Error::InvalidName)
    );
    assert_eq!(
        s.try_lock(T, "__leader", "w", SEC, None).err(),
        Some(Error::ReservedName)
    );
    assert!(matches!(
        s.try_lock(T, "x", "w", Duration::ZERO, None),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        s.try_lock(T, "x", "w", Duration::from_secs(86_401), None),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(
        s.try_lock(T, "x", "", SEC, None).err(),
        Some(Error::InvalidName)
    );
    assert_eq!(s.stats().locks, 0);
}

#[test]
fn acquire_contend_release_reacquire() {
    let (_c, s) = store();
    let a = s
        .try_lock(T, "job", "a", SEC * 10, None)
        .unwrap()
        .expect("free lock");
    assert!(
        s.try_lock(T, "job", "b", SEC * 10, None).unwrap().is_none(),
        "losing is a value"
    );
    assert!(
        s.try_lock(TenantId(4), "job", "b", SEC * 10, None)
            .unwrap()
            .is_some(),
        "names are per tenant"
    );
    assert_eq!(s.get_lock(T, "job").unwrap().holder.as_ref(), "a");
    a.release().unwrap();
    a.release().unwrap(); // idempotent
    assert_eq!(s.get_lock(T, "job"), Err(Error::NotFound));
    let b = s
        .try_lock(T, "job", "b", SEC * 10, None)
        .unwrap()
        .expect("released lock is free");
    assert!(b.fence() > a.fence());
}

#[test]
fn a_lapsed_lock_is_retaken_with_a_higher_fence_and_its_renewal_is_refused() {
    let (c, s) = store();
    let a = s.try_lock(T, "job", "a", SEC, None).unwrap().unwrap();
    c.advance(SEC);
    assert_eq!(
        s.get_lock(T, "job"),
        Err(Error::NotFound),
        "lapsed silently"
    );
    assert_eq!(
        a.renew(SEC).err(),
        Some(Error::Expired),
        "refused even though nobody took it"
    );
    s.sweep();
    assert_eq!(
        a.renew(SEC).err(),
        Some(Error::Expired),
        "also after the sweep"
    );
    let b = s.try_lock(T, "job", "b", SEC, None).unwrap().unwrap();
    assert!(b.fence() > a.fence());
    assert_eq!(
        a.renew(SEC).err(),
        Some(Error::Expired),
        "and after a new owner took it"
    );
}

#[test]
fn renew_is_an_absolute_reset() {
    let (c, s) = store();
    let a = s.try_lock(T, "job", "a", SEC * 10, None).unwrap().unwrap();
    c.advance(SEC * 5);
    let stamp = a.renew(SEC * 2).unwrap();
    assert_eq!(stamp.remaining, SEC * 2);
    assert_eq!(a.deadline().as_millis(), 7000);
    c.advance(SEC * 2);
    assert!(s.try_lock(T, "job", "b", SEC, None).unwrap().is_some());
}

#[test]
fn a_stale_holders_release_never_frees_the_new_holders_lock() {
    let (c, s) = store();
    let a = s.try_lock(T, "job", "a", SEC, None).unwrap().unwrap();
    c.advance(SEC);
    let b = s.try_lock(T, "job", "b", SEC * 10, None).unwrap().unwrap();
    a.release().unwrap();
    assert_eq!(s.get_lock(T, "job").unwrap().fence, b.fence());
    assert!(s.try_lock(T, "job", "c", SEC, None).unwrap().is_none());
    b.renew(SEC * 10).unwrap();
}

#[test]
fn revoking_a_lease_releases_its_locks() {
    let (_c, s) = store();
    let events = s.subscribe().unwrap();
    let lease = s.grant(T, "leader", SEC * 60, None).unwrap();
    let g = s
        .try_lock(T, "shard-1", "leader", SEC * 30, Some(lease.id))
        .unwrap()
        .unwrap();
    s.revoke(T, lease.id).unwrap();
    assert_eq!(s.get_lock(T, "shard-1"), Err(Error::NotFound));
    assert!(matches!(
        g.renew(SEC).err(),
        Some(Error::NotFound | Error::Expired)
    ));
    let taken = s.try_lock(T, "shard-1", "other", SEC, None).unwrap();
    assert!(taken.is_some());
    let causes: Vec<(Collection, Cause)> = events
        .try_recv_all()
        .into_iter()
        .filter_map(|r| match r {
            Received::Event(e) => Some((e.collection, e.cause)),
            _ => None,
        })
        .collect();
    assert!(
        causes.contains(&(Collection::Locks, Cause::Cascaded)),
        "{causes:?}"
    );
    assert_eq!(
        s.try_lock(T, "shard-2", "x", SEC, Some(lease.id)).err(),
        Some(Error::Revoked)
    );
}

#[test]
fn lock_ceilings_refuse_with_their_scope() {
    let (_c, s) = store_with(
        StoreConfig::default()
            .locks_max(3)
            .tenant(TenantQuota::default().locks_max(2)),
    );
    let _a = s.try_lock(T, "a", "w", SEC, None).unwrap().unwrap();
    let _b = s.try_lock(T, "b", "w", SEC, None).unwrap().unwrap();
    assert_eq!(
        (s.try_lock(T, "c", "w", SEC, None).err()).and_then(|e| e.capacity_scope()),
        Some(Scope::Tenant(Collection::Locks))
    );
    let _c = s
        .try_lock(TenantId(9), "c", "w", SEC, None)
        .unwrap()
        .unwrap();
    assert_eq!(
        (s.try_lock(TenantId(10), "d", "w", SEC, None).err()).and_then(|e| e.capacity_scope()),
        Some(Scope::Collection(Collection::Locks))
    );
    assert_eq!(s.stats().locks, 3);
}

#[test]
fn eight_threads_contending_for_one_lock_never_share_it() {
    let (_c, s) = store();
    let s = Arc::new(s);
    let holders = Arc::new(AtomicUsize::new(0));
    let last_fence = Arc::new(AtomicU64::new(0));
    let rounds = 10_000;
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (s, holders, last_fence) = (s.clone(), holders.clone(), last_fence.clone());
            std::thread::spawn(move || {
                let mut won = 0u64;
                for _ in 0..rounds {
                    if let Some(g) = s
                        .try_lock(T, "hot", &format!("w{t}"), SEC * 60, None)
                        .unwrap()
                    {
                        assert_eq!(
                            holders.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two live holders"
                        );
                        let previous = last_fence.swap(g.fence(), Ordering::SeqCst);
                        assert!(
                            g.fence() > previous,
                            "fence went from {previous} to {}",
                            g.fence()
                        );
                        holders.fetch_sub(1, Ordering::SeqCst);
                        g.release().unwrap();
                        won += 1;
                    }
                }
                won
            })
        })
        .collect();
    let won: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(won > 0);
    assert_eq!(
        s.get_lock(T, "hot"),
        Err(Error::NotFound),
        "every winner released"
    );
    assert_eq!(s.stats().locks, 0);
    let fresh = s.try_lock(T, "hot", "after", SEC, None).unwrap().unwrap();
    assert!(fresh.fence() > last_fence.load(Ordering::SeqCst));
}
