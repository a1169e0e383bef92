//! Limits and quota policy changed at run time: raising admits more at
//! once, lowering below use evicts nothing and refuses until use falls
//! under, fixed fields are refused by name, and a refused change changes
//! nothing.

mod common;

use common::ops::*;
use relaystore::events::Collection;
use relaystore::{Error, QuotaPolicy, Scope, StoreConfig, TenantId, TenantQuota, UniformQuota};
use std::sync::Arc;

fn grant(s: &relaystore::Store, t: TenantId) -> Result<relaystore::LeaseGrant, Error> {
    s.grant(t, "h", SEC * 60, None)
}

#[test]
fn raising_a_ceiling_admits_at_once_and_lowering_it_evicts_nothing() {
    let (_c, s) = store_with(StoreConfig {
        leases_max: 2,
        ..config()
    });
    let a = grant(&s, T).unwrap();
    grant(&s, OTHER).unwrap();
    assert_eq!(
        grant(&s, T).map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Collection(Collection::Leases),
            limit: 2,
            used: 2
        })
    );
    s.reconfigure(StoreConfig {
        leases_max: 3,
        ..s.config()
    })
    .unwrap();
    assert_eq!(s.config().leases_max, 3);
    let b = grant(&s, T).unwrap();
    // Lowered below use: everything stays, new work waits for room.
    s.reconfigure(StoreConfig {
        leases_max: 1,
        ..s.config()
    })
    .unwrap();
    assert_eq!(s.stats().leases, 3, "nothing evicted");
    assert!(s.get_lease(T, a.id).is_ok() && s.get_lease(T, b.id).is_ok());
    assert_eq!(
        grant(&s, T).map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Collection(Collection::Leases),
            limit: 1,
            used: 3
        })
    );
    s.revoke(T, a.id).unwrap();
    s.revoke(T, b.id).unwrap();
    assert_eq!(
        grant(&s, T).map(drop).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Collection(Collection::Leases))),
        "still at the new limit (one lease held)"
    );
    s.reconfigure(StoreConfig {
        leases_max: 2,
        ..s.config()
    })
    .unwrap();
    grant(&s, T).unwrap();
    s.audit().unwrap();
}

#[test]
fn tenant_quotas_change_for_registered_tenants_each_whole() {
    let (_c, s) = store_with(StoreConfig {
        tenant: TenantQuota {
            leases_max: 1,
            ..config().tenant
        },
        ..config()
    });
    grant(&s, T).unwrap();
    assert_eq!(
        grant(&s, T).map(drop).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(Collection::Leases)))
    );
    // Through reconfigure: a new uniform quota, for the registered tenant
    // too.
    s.reconfigure(StoreConfig {
        tenant: TenantQuota {
            leases_max: 2,
            ..config().tenant
        },
        ..s.config()
    })
    .unwrap();
    grant(&s, T).unwrap();
    assert_eq!(
        s.usage(T).of(Collection::Leases).map(|u| (u.used, u.limit)),
        Some((2, 2))
    );
    // Through a policy: a paying tenant gets more, the others less.
    struct Tiered;
    impl QuotaPolicy for Tiered {
        fn quota(&self, tenant: TenantId) -> TenantQuota {
            let leases_max = if tenant == T { 3 } else { 1 };
            TenantQuota {
                leases_max,
                ..TenantQuota::default()
            }
        }
    }
    s.set_quota_policy(Arc::new(Tiered));
    grant(&s, T).unwrap();
    assert_eq!(
        grant(&s, T).map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Tenant(Collection::Leases),
            limit: 3,
            used: 3
        })
    );
    grant(&s, OTHER).unwrap();
    assert_eq!(
        grant(&s, OTHER).map(drop).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(Collection::Leases))),
        "a tenant registered after the swap gets the new policy"
    );
    s.set_quota_policy(Arc::new(UniformQuota(TenantQuota::default())));
    grant(&s, OTHER).unwrap();
    s.audit().unwrap();
}

#[test]
fn fixed_fields_and_invalid_sets_are_refused_and_change_nothing() {
    let (_c, s) = store();
    let before = s.config();
    assert_eq!(
        s.reconfigure(StoreConfig {
            name_bytes_max: 64,
            ..s.config()
        }),
        Err(Error::InvalidConfig {
            field: "name_bytes_max",
            rule: "cannot change at run time"
        })
    );
    assert_eq!(
        s.reconfigure(StoreConfig {
            leases_max: 0,
            ..s.config()
        }),
        Err(Error::InvalidConfig {
            field: "leases_max",
            rule: "must be positive"
        })
    );
    assert_eq!(s.config(), before);
    // The same configuration again is a no-op.
    s.reconfigure(s.config()).unwrap();
    assert_eq!(s.config(), before);
}

#[test]
fn reconfiguring_while_eight_threads_create_keeps_every_count() {
    let (_c, s) = store_with(StoreConfig {
        leases_max: 50,
        tenant: TenantQuota::unlimited(),
        ..config()
    });
    std::thread::scope(|scope| {
        for w in 0..8u64 {
            let s = s.clone();
            scope.spawn(move || {
                for _ in 0..300 {
                    match s.grant(TenantId(w), "h", SEC * 60, None) {
                        Ok(g) => s.revoke(TenantId(w), g.id).unwrap(),
                        Err(e) => assert_eq!(
                            e.capacity_scope(),
                            Some(Scope::Collection(Collection::Leases)),
                            "{e:?}"
                        ),
                    }
                }
            });
        }
        for round in 0..50u64 {
            s.reconfigure(StoreConfig {
                leases_max: 1 + round % 7,
                ..s.config()
            })
            .unwrap();
        }
    });
    s.audit().unwrap();
    assert_eq!(s.stats().leases, 0);
}
