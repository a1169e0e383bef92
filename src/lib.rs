//! relaystore: the ephemeral-state store a network relay embeds.
//!
//! A relay (a game-session relay, a TURN-like media relay, a rendezvous
//! service) must remember, for seconds to hours, who is hosting, who is alive
//! and which tokens were used, and must do so on its packet path, within hard
//! bounds, and deterministically enough to test exactly. This crate is that
//! memory.
//!
//! [`Store`] is that memory: per tenant, **leases** with fencing tokens,
//! **listings** attached to them, **presence**, **join attempts** with
//! one-time tokens, endpoint binding and replay rejection, **cascade
//! revocation**, **idempotency keys**, **named locks** and **removal
//! events**. Build one with [`Store::builder`]; it is a cheap `Clone`
//! handle, and by default a background driver expires records on time.
//!
//! ```
//! use relaystore::{Error, Store, TenantId};
//! use std::time::Duration;
//!
//! let store = Store::builder().build()?;
//! let game = TenantId(1);
//! let lease = store.grant(game, "host-a", Duration::from_secs(30), None)?;
//! store.publish(game, lease.id, "lobby-1", b"mode=ffa", None)?;
//! let ticket = store.begin_join(game, "lobby-1", "client-7", Duration::from_secs(10), None)?;
//! store.bind_endpoint(game, ticket.attempt, &ticket.token, "203.0.113.9:4000".parse().unwrap())?;
//! store.consume(game, &ticket.token)?;                  // admitted, exactly once
//! assert_eq!(store.consume(game, &ticket.token), Err(Error::ReplayRejected));
//! store.revoke(game, lease.id)?;                        // the listing goes with it
//! assert_eq!(store.get_listing(game, "lobby-1"), Err(Error::NotFound));
//! # Ok::<(), Error>(())
//! ```
//!
//! Every store is bounded ([`StoreConfig`], [`TenantQuota`]: a full store
//! refuses with [`Error::CapacityExceeded`] and evicts nothing), fair (a
//! tenant at its own limit costs the others nothing), and deterministic on
//! a [`ManualClock`](time::ManualClock).
//!
//! # One contract, more than one engine
//!
//! Relay code that should outlive one process is written against
//! [`Engine`]: every relay operation, async, with engine-neutral values
//! (ids that travel as text or bytes, time as time remaining, a typed
//! [`Error::BackendUnavailable`]). [`Store`] implements it with futures that
//! complete at once and keeps its synchronous methods as the fast path.
//! The Redis engine (feature `redis`) implements it too, for relays that
//! share their state across processes; [`RelayEngine`] (the relay
//! records: leases, endpoints, listings, presence, joins, locks, tenants,
//! removal events), [`WakeEngine`] (with wake channels) and
//! [`StreamEngine`] (with streams) are the parts below it, for code that
//! needs no more. The `conformance` feature's suite checks
//! that every engine behaves the same.
//!
//! # Features
//!
//! - `conformance`: the conformance suite (`relaystore::conformance`), for
//!   an engine's own tests.
//! - `internals`: the parts the store is built from (a hierarchical timing
//!   wheel, padded quota counters, a bounded `TtlMap` with its expiry
//!   driver) and the test oracles (`Store::audit`, `Store::digest`), for
//!   benches and experiments. Not a stable API.
//!
//! See `docs/ARCHITECTURE.md` for the design and `docs/adr/` for the
//! decisions behind it.

mod base;
#[cfg(feature = "conformance")]
pub mod conformance;
mod contract;
mod coord;
mod mem;
#[cfg(relaystore_loom)]
#[doc(hidden)]
pub mod model;
#[cfg(feature = "redis")]
pub mod redis;
mod store;

#[cfg(relaystore_loom)]
#[doc(hidden)]
pub use base::faults;
pub use base::time;
pub use coord::{queue, schedule, stream};
pub use mem::{events, wake};
#[cfg(feature = "internals")]
pub use mem::{quota, wheel};

pub use base::error::{Error, Result, Scope, Unavailable};
pub use base::holder::Holder;
pub use base::ids::{
    AttemptId, JobId, JoinToken, LeaseId, ParseIdError, TenantId, TOKEN_SECRET_BYTES,
};
pub use contract::config::{
    QuotaPolicy, StoreConfig, TenantQuota, UniformQuota, SCHEDULE_CATCH_UP_MAX,
};
pub use contract::engine::{Engine, Events, Follow, RelayEngine, StreamEngine, WakeEngine, Wakes};
pub use contract::runner::ScheduleRunner;
pub use coord::queue::ClaimedJob;
#[cfg(all(feature = "internals", not(relaystore_loom)))]
#[cfg(feature = "native")]
pub use mem::driver::{ExpiryDriver, Sweep};
#[cfg(feature = "internals")]
pub use mem::record::{Stamp, CAS_ATTEMPTS_MAX, DEADLINE_MAX_MS};
#[cfg(feature = "internals")]
pub use mem::ttl::{Removed, TtlConfig, TtlMap};
#[cfg(feature = "internals")]
pub use store::AuditError;
pub use store::{
    outbox_config, Admission, Binding, Cursor, DeadLetter, DegradedReason, EndpointSeen, Health,
    JoinTicket, LeaseGrant, LeaseInfo, ListingInfo, LockGuard, LockInfo, OutboxMessage, OutboxRun,
    Page, PresenceInfo, Renewal, Scheduler, SchedulerStep, SchedulerStop, Stats, Store,
    StoreBuilder, TenantUsage, Usage, EXPIRY_TICK_DEFAULT, OUTBOX_QUEUE, REFUSAL_LOG_INTERVAL,
    RESERVED_PREFIX, SCHEDULER_LOCK,
};
pub use store::{Committed, Transaction, TX_OPS_MAX};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
