//! Configuration validation: every broken limit is refused with
//! `InvalidConfig` naming the field, and nothing is built.

use relaystore::time::ManualClock;
use relaystore::{Error, Store, StoreConfig, TenantQuota};
use std::sync::Arc;
use std::time::Duration;

fn refused_field(config: StoreConfig) -> &'static str {
    match Store::new(config, Arc::new(ManualClock::new())) {
        Err(Error::InvalidConfig { field, .. }) => field,
        other => panic!("not refused with InvalidConfig: {other:?}"),
    }
}

#[test]
fn each_broken_limit_is_refused_by_name() {
    let d = StoreConfig::default;
    let q = TenantQuota::default;
    let cases: Vec<(&str, StoreConfig)> = vec![
        (
            "ttl_min",
            StoreConfig {
                ttl_min: Duration::ZERO,
                ..d()
            },
        ),
        (
            "ttl_max",
            StoreConfig {
                ttl_max: Duration::from_millis(1),
                ..d()
            },
        ),
        (
            "ttl_max",
            StoreConfig {
                ttl_max: Duration::from_secs(u64::MAX / 4),
                ..d()
            },
        ),
        (
            "leases_max",
            StoreConfig {
                leases_max: (1 << 28) + 1,
                ..d()
            },
        ),
        (
            "replay_max",
            StoreConfig {
                replay_max: (1 << 28) + 1,
                ..d()
            },
        ),
        (
            "tombstone_ttl",
            StoreConfig {
                tombstone_ttl: Duration::ZERO,
                ..d()
            },
        ),
        (
            "idempotency_ttl",
            StoreConfig {
                idempotency_ttl: Duration::ZERO,
                ..d()
            },
        ),
        (
            "driver_stall_max",
            StoreConfig {
                driver_stall_max: Duration::ZERO,
                ..d()
            },
        ),
        (
            "drain_window_max",
            StoreConfig {
                drain_window_max: Duration::MAX,
                ..d()
            },
        ),
        (
            "fence_floor",
            StoreConfig {
                fence_floor: u64::MAX,
                ..d()
            },
        ),
        (
            "tenants_max",
            StoreConfig {
                tenants_max: 0,
                ..d()
            },
        ),
        (
            "leases_max",
            StoreConfig {
                leases_max: 0,
                ..d()
            },
        ),
        (
            "replay_max",
            StoreConfig {
                replay_max: 0,
                ..d()
            },
        ),
        (
            "tombstones_max",
            StoreConfig {
                tombstones_max: 0,
                ..d()
            },
        ),
        (
            "tenant.presence_max",
            StoreConfig {
                tenant: TenantQuota {
                    presence_max: 0,
                    ..q()
                },
                ..d()
            },
        ),
        (
            "tenant.locks_max",
            StoreConfig {
                tenant: TenantQuota {
                    locks_max: 0,
                    ..q()
                },
                ..d()
            },
        ),
        (
            "attempts_per_listing_max",
            StoreConfig {
                attempts_per_listing_max: 0,
                ..d()
            },
        ),
        (
            "subscriber_buffer_max",
            StoreConfig {
                subscriber_buffer_max: 0,
                ..d()
            },
        ),
    ];
    for (field, config) in cases {
        assert_eq!(refused_field(config), field);
    }
    // Switched-off quotas and empty attributes are valid.
    Store::new(
        StoreConfig {
            tenant: TenantQuota::unlimited(),
            attrs_bytes_max: 0,
            ..d()
        },
        Arc::new(ManualClock::new()),
    )
    .unwrap();
}

#[test]
fn the_largest_lease_ceiling_is_accepted() {
    let store = Store::new(
        StoreConfig {
            leases_max: 1 << 28,
            replay_max: 1 << 28,
            ..StoreConfig::default()
        },
        Arc::new(ManualClock::new()),
    )
    .unwrap();
    let lease = store
        .grant(relaystore::TenantId(1), "h", Duration::from_secs(1), None)
        .unwrap();
    assert_eq!(store.stats().leases, 1);
    assert!(store.get_lease(relaystore::TenantId(1), lease.id).is_ok());
}

#[test]
fn setters_chain_from_the_defaults_to_the_same_values_as_fields() {
    use relaystore::queue::QueueConfig;
    let chained = StoreConfig::default()
        .leases_max(5_000)
        .ttl_min(Duration::from_millis(50))
        .tenant(TenantQuota::default().listings_max(7));
    let literal = StoreConfig {
        leases_max: 5_000,
        ttl_min: Duration::from_millis(50),
        tenant: TenantQuota {
            listings_max: 7,
            ..TenantQuota::default()
        },
        ..StoreConfig::default()
    };
    assert_eq!(chained, literal);
    let queue = QueueConfig::default()
        .jobs_max(100)
        .visibility(Duration::from_secs(30));
    assert_eq!((queue.jobs_max, queue.dead_letters_cap()), (100, 10));
    let s = relaystore::Store::builder()
        .config(chained)
        .without_expiry_driver()
        .build()
        .unwrap();
    s.create_queue(relaystore::TenantId(1), "work", queue)
        .unwrap();
}
