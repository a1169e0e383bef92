//! A small, sequential reference model of the store's contract, and a
//! driver that runs the same operations against the real store and the
//! model and compares every outcome.
//!
//! The model is written straight from the contract, with plain maps and no
//! concurrency: a record is live while `now < deadline`, removed only by the
//! sweep or an explicit removal, a revoked lease leaves a tombstone, a
//! listing is visible only while its lease is, a consumed token is
//! remembered for the grace period, and authorizations fail closed when the
//! sweep has not run for `driver_stall_max`. Streams: offsets never reused,
//! entry and age retention (refuse or trim when full), commits never
//! backwards, a stream attached to a lease gone with it (its name free
//! again). Wakes: a notify marks every listener of its channel attached
//! before it, and a listener holds at most one wake.
#![allow(dead_code)]

use relaystore::StoreConfig;
use std::time::Duration;

mod driver;
mod ops;
mod reference;

pub use driver::{run, run_with_model_grace};
pub use ops::{decode, Op};

pub const TTL_MIN_MS: u64 = 10;
pub const TTL_MAX_MS: u64 = 60_000;
pub const GRACE_MS: u64 = 5_000;
pub const TOMBSTONE_MS: u64 = 10_000;
pub const STALL_MS: u64 = 5_000;
pub const LISTINGS_PER_LEASE: usize = 2;
pub const ATTEMPTS_PER_LISTING: usize = 2;
pub const STREAM_ENTRIES: usize = 3;
pub const STREAM_AGE_MS: u64 = 3_000;

pub fn config() -> StoreConfig {
    StoreConfig {
        ttl_min: Duration::from_millis(TTL_MIN_MS),
        ttl_max: Duration::from_millis(TTL_MAX_MS),
        replay_grace: Duration::from_millis(GRACE_MS),
        tombstone_ttl: Duration::from_millis(TOMBSTONE_MS),
        driver_stall_max: Duration::from_millis(STALL_MS),
        listings_per_lease_max: LISTINGS_PER_LEASE,
        attempts_per_listing_max: ATTEMPTS_PER_LISTING,
        ..StoreConfig::default()
    }
}
