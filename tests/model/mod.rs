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
//! entry and age retention (refuse or trim when full), trims that answer
//! the first offset a read returns, commits never backwards, at most
//! `STREAM_CONSUMERS` consumers and groups together, a stream attached to
//! a lease gone with it (its name free again). Consumer groups: reads in
//! offset order into a pending list of `GROUP_PENDING` (trimmed offsets
//! passed over and counted), acks, idle claims the longest idle first
//! that bury an entry delivered `GROUP_DELIVERIES` times. Wakes: a notify marks every listener of its
//! channel attached before it, and a listener holds at most one wake. Queues: claims oldest
//! first, one live claim per job, a lapse uses an attempt, a failure backs
//! off (the queue's seeded jitter), the last attempt dead-letters, jobs and
//! payload bytes and dead letters within the queue's caps. Schedules: caps
//! per tenant and store-wide, a replacement restarts the grid (they are
//! never run here). Transactions: all of it or nothing, each change
//! decided as if made one after another (appends first).
#![allow(dead_code)]

pub use relaystore::queue::PRIORITY_MAX;
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
/// Every stream entry's payload.
pub const STREAM_PAYLOAD: &[u8] = b"payload";
/// Consumers one stream takes (of the three names the ops use).
pub const STREAM_CONSUMERS: usize = 2;
/// A consumer group's pending list, deliveries per entry and the idle
/// time its claims ask for (small, so the model fills and buries).
pub const GROUP_PENDING: usize = 3;
pub const GROUP_DELIVERIES: u32 = 2;
pub const GROUP_IDLE_MS: u64 = 1_000;
/// Wakes one listener queues (small, so the model fills it).
pub const WAKE_QUEUE: usize = 2;
pub const QUEUE_JOBS: usize = 4;
pub const QUEUE_DEAD: usize = 2;
pub const QUEUE_ATTEMPTS: u32 = 2;
pub const QUEUE_VISIBILITY_MS: u64 = 1_000;
pub const QUEUE_SHORT_MS: u64 = 300;
pub const QUEUE_DELAY_MS: u64 = 500;
pub const QUEUE_BACKOFF_MS: u64 = 400;
pub const QUEUE_SEED: u64 = 5;
/// A big job's payload: the queue's `bytes_max` (1,024) holds two.
pub const QUEUE_BIG_BYTES: usize = 400;
/// Schedules per tenant, and in the store (of the three names per tenant
/// the ops use, two tenants).
pub const SCHEDULES_PER_TENANT: u64 = 2;
pub const SCHEDULES: u64 = 3;
pub const SCHEDULE_FAST_MS: u64 = 1_000;
pub const SCHEDULE_SLOW_MS: u64 = 3_000;

/// Every tenant's queue `q` (created before the first op).
pub fn queue_config() -> relaystore::queue::QueueConfig {
    relaystore::queue::QueueConfig::default()
        .jobs_max(QUEUE_JOBS)
        .bytes_max(1024)
        .dead_letters_max(Some(QUEUE_DEAD))
        .attempts_max(QUEUE_ATTEMPTS)
        .visibility(Duration::from_millis(QUEUE_VISIBILITY_MS))
        .backoff(relaystore::queue::Backoff {
            base: Duration::from_millis(QUEUE_BACKOFF_MS),
            max: Duration::from_millis(QUEUE_BACKOFF_MS),
        })
        .jitter_seed(Some(QUEUE_SEED))
}

pub fn config() -> StoreConfig {
    StoreConfig::default()
        .ttl_min(Duration::from_millis(TTL_MIN_MS))
        .ttl_max(Duration::from_millis(TTL_MAX_MS))
        .replay_grace(Duration::from_millis(GRACE_MS))
        .tombstone_ttl(Duration::from_millis(TOMBSTONE_MS))
        .driver_stall_max(Duration::from_millis(STALL_MS))
        .listings_per_lease_max(LISTINGS_PER_LEASE)
        .attempts_per_listing_max(ATTEMPTS_PER_LISTING)
        .consumers_per_stream_max(STREAM_CONSUMERS)
        .wake_queue_max(WAKE_QUEUE)
        .schedules_per_tenant_max(SCHEDULES_PER_TENANT)
        .schedules_max(SCHEDULES)
}
