//! The fixture of the per-collection operation tests: one tenant (and
//! another for isolation probes), short TTL bounds and small caps.

use relaystore::time::ManualClock;
use relaystore::{Store, StoreConfig, TenantId};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub const T: TenantId = TenantId(1);
pub const OTHER: TenantId = TenantId(2);
pub const SEC: Duration = Duration::from_secs(1);

pub fn config() -> StoreConfig {
    StoreConfig::default()
        .ttl_min(Duration::from_millis(10))
        .ttl_max(Duration::from_secs(3600))
        .listings_per_lease_max(3)
        .attempts_per_listing_max(2)
        .endpoints_per_lease_max(2)
        .replay_grace(Duration::from_secs(5))
        .tombstone_ttl(Duration::from_secs(60))
        .idempotency_ttl(Duration::from_secs(30))
}

pub fn store_with(config: StoreConfig) -> (Arc<ManualClock>, Store) {
    let clock = Arc::new(ManualClock::new());
    let store = Store::new(config, clock.clone()).expect("valid config");
    (clock, store)
}

pub fn store() -> (Arc<ManualClock>, Store) {
    store_with(config())
}

pub fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([203, 0, 113, 7], port))
}

/// A lease of `T` for ten minutes with the listing "lobby" under it.
pub fn hosted(s: &Store) -> relaystore::LeaseGrant {
    let g = s.grant(T, "host", SEC * 600, None).unwrap();
    s.publish(T, g.id, "lobby", b"", None).unwrap();
    g
}
