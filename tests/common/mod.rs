//! Fixtures shared by the integration tests: stores on a manual clock,
//! addresses, and round counts that heavy runs raise through environment
//! variables.

#![allow(dead_code)]

pub mod ops;

use relaystore::time::ManualClock;
use relaystore::{Store, StoreConfig, TenantId};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub const A: TenantId = TenantId(1);
pub const B: TenantId = TenantId(2);
pub const SEC: Duration = Duration::from_secs(1);

/// A store with `config` on a fresh manual clock.
pub fn store_with(config: StoreConfig) -> (Arc<ManualClock>, Arc<Store>) {
    let clock = Arc::new(ManualClock::new());
    let store = Arc::new(Store::new(config, clock.clone()).unwrap());
    (clock, store)
}

/// A store with the default limits on a fresh manual clock.
pub fn store() -> (Arc<ManualClock>, Arc<Store>) {
    store_with(StoreConfig::default())
}

/// A documentation-range address with `port`.
pub fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 9], port))
}

/// `default`, or the number in environment variable `var` (heavy runs).
pub fn rounds(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{var} must be a whole number, not {v:?}")),
        Err(_) => default,
    }
}
