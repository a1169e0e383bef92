//! `Store::usage`: a tenant's use of each of its limits.

mod common;

use common::ops::*;
use relaystore::events::Collection;
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{Error, QuotaPolicy, Scope, Store, TenantId, TenantQuota, Usage};
use std::sync::Arc;

#[test]
fn usage_counts_what_a_tenant_holds_against_its_quotas() {
    let (_c, s) = store_with(
        config()
            .tenant(config().tenant.leases_max(2))
            .streams_per_tenant_max(3),
    );
    let q = s.config().tenant.clone();
    let fresh = s.usage(T);
    assert_eq!(
        fresh.of(Collection::Leases),
        Some(Usage { used: 0, limit: 2 })
    );
    assert_eq!(
        fresh.of(Collection::Listings),
        Some(Usage {
            used: 0,
            limit: q.listings_max
        })
    );
    assert_eq!(fresh.of(Collection::Tombstones), None, "no tenant quota");

    let g = s.grant(T, "host", SEC * 60, None).unwrap();
    s.grant(T, "host", SEC * 60, None).unwrap();
    s.publish(T, g.id, "lobby", b"", None).unwrap();
    s.heartbeat(T, "m", SEC * 60, None, None).unwrap();
    s.create_stream(T, "log", StreamConfig::new(4, 64, WhenFull::Refuse))
        .unwrap();
    let used = |c| s.usage(T).of(c).map(|u| u.used);
    assert_eq!(used(Collection::Leases), Some(2));
    assert_eq!(used(Collection::Listings), Some(1));
    assert_eq!(used(Collection::Presence), Some(1));
    assert_eq!(used(Collection::Locks), Some(0));
    assert_eq!(
        s.usage(T).of(Collection::Streams),
        Some(Usage { used: 1, limit: 3 })
    );
    // At the limit, the refusal and the usage agree.
    assert_eq!(
        s.grant(T, "host", SEC * 60, None).map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Tenant(Collection::Leases),
            limit: 2,
            used: 2,
        })
    );
    assert_eq!(
        s.usage(T).of(Collection::Leases),
        Some(Usage { used: 2, limit: 2 })
    );
    // Another tenant's usage is its own.
    assert_eq!(
        s.usage(OTHER).of(Collection::Leases).map(|u| u.used),
        Some(0)
    );
    // Giving everything back brings usage to zero (the tenant is forgotten).
    s.revoke_tenant(T).unwrap();
    s.delete_stream(T, "log").unwrap();
    assert_eq!(used(Collection::Leases), Some(0));
    assert_eq!(used(Collection::Streams), Some(0));
}

struct Tiered;

impl QuotaPolicy for Tiered {
    fn quota(&self, tenant: TenantId) -> TenantQuota {
        let mut q = TenantQuota::default();
        if tenant.0 == 1 {
            q.leases_max = TenantQuota::OFF;
        } else {
            q.leases_max = 5;
        }
        q
    }
}

#[test]
fn usage_follows_the_quota_policy() {
    let clock = Arc::new(relaystore::time::ManualClock::new());
    let s = Store::with_policy(config(), clock, Arc::new(Tiered)).unwrap();
    assert_eq!(
        s.usage(T).of(Collection::Leases),
        None,
        "a quota switched off"
    );
    s.grant(T, "host", SEC * 60, None).unwrap();
    assert_eq!(s.usage(T).of(Collection::Leases), None, "still uncounted");
    assert_eq!(
        s.usage(OTHER).of(Collection::Leases),
        Some(Usage { used: 0, limit: 5 })
    );
    s.grant(OTHER, "host", SEC * 60, None).unwrap();
    assert_eq!(
        s.usage(OTHER).of(Collection::Leases),
        Some(Usage { used: 1, limit: 5 })
    );
}
