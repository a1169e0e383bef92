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
        ("ttl_min", d().ttl_min(Duration::ZERO)),
        ("ttl_max", d().ttl_max(Duration::from_millis(1))),
        ("ttl_max", d().ttl_max(Duration::from_secs(u64::MAX / 4))),
        ("leases_max", d().leases_max((1 << 28) + 1)),
        ("replay_max", d().replay_max((1 << 28) + 1)),
        ("tombstone_ttl", d().tombstone_ttl(Duration::ZERO)),
        ("idempotency_ttl", d().idempotency_ttl(Duration::ZERO)),
        ("driver_stall_max", d().driver_stall_max(Duration::ZERO)),
        ("drain_window_max", d().drain_window_max(Duration::MAX)),
        ("fence_floor", d().fence_floor(u64::MAX)),
        ("tenants_max", d().tenants_max(0)),
        ("leases_max", d().leases_max(0)),
        ("replay_max", d().replay_max(0)),
        ("tombstones_max", d().tombstones_max(0)),
        ("tenant.presence_max", d().tenant(q().presence_max(0))),
        ("tenant.locks_max", d().tenant(q().locks_max(0))),
        ("attempts_per_listing_max", d().attempts_per_listing_max(0)),
        ("subscriber_buffer_max", d().subscriber_buffer_max(0)),
    ];
    for (field, config) in cases {
        assert_eq!(refused_field(config), field);
    }
    // Switched-off quotas and empty attributes are valid.
    Store::new(
        d().tenant(TenantQuota::unlimited()).attrs_bytes_max(0),
        Arc::new(ManualClock::new()),
    )
    .unwrap();
}

#[test]
fn the_largest_lease_ceiling_is_accepted() {
    let store = Store::new(
        StoreConfig::default()
            .leases_max(1 << 28)
            .replay_max(1 << 28),
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
    let literal = StoreConfig::default()
        .leases_max(5_000)
        .ttl_min(Duration::from_millis(50))
        .tenant(TenantQuota::default().listings_max(7));
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

/// A rule on two fields names both, with the values it saw, in the error
/// and in its message; a rule on one shows that one's value.
#[test]
fn a_refusal_shows_the_values_it_checked() {
    let refused = Store::new(
        StoreConfig::default()
            .ttl_min(Duration::from_secs(10))
            .ttl_max(Duration::from_secs(5)),
        Arc::new(ManualClock::new()),
    )
    .expect_err("ttl_max below ttl_min is refused");
    assert_eq!(
        refused,
        Error::InvalidConfig {
            field: "ttl_max",
            rule: "must be at least ttl_min",
            values: "ttl_min = 10s, ttl_max = 5s".into(),
        }
    );
    assert_eq!(
        refused.to_string(),
        "invalid configuration: ttl_max must be at least ttl_min (ttl_min = 10s, ttl_max = 5s)"
    );
    let zero = Store::new(
        StoreConfig::default().tenant(TenantQuota::default().locks_max(0)),
        Arc::new(ManualClock::new()),
    )
    .expect_err("a zero quota is refused");
    assert!(
        zero.to_string().ends_with("(tenant.locks_max = 0)"),
        "{zero}"
    );
}
