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
//! Underneath is the engine every collection is built on, usable alone:
//!
//! - [`time`]: the [`Clock`](time::Clock) trait, [`SystemClock`](time::SystemClock)
//!   and the test-driven [`ManualClock`](time::ManualClock). Time is an input;
//!   the core never reads the OS clock.
//! - Versioned records in sharded concurrent maps, every transition a
//!   compare-and-swap ([`Stamp`], [`Error::Conflict`]).
//! - [`wheel`]: a hierarchical timing wheel with O(1) insert and cancel and
//!   deterministic expiry order.
//! - [`quota`]: padded atomic counters and all-or-nothing reservations.
//! - [`TtlMap`]: a bounded map of expiring entries built from those parts,
//!   and [`ExpiryDriver`], the background thread that sweeps it.
//!
//! # The engine alone
//!
//! ```
//! use relaystore::{time::ManualClock, Error, TtlConfig, TtlMap};
//! use std::{sync::Arc, time::Duration};
//!
//! let clock = Arc::new(ManualClock::new());
//! let sessions = TtlMap::new(
//!     TtlConfig { name: "sessions", entries_max: 2, ..TtlConfig::default() },
//!     clock.clone(),
//! )?;
//!
//! sessions.insert(1u64, "host-a", Duration::from_secs(30))?;
//! sessions.insert(2u64, "host-b", Duration::from_secs(30))?;
//! // The map is full: new work is refused with a typed error, nothing evicted.
//! assert!(matches!(
//!     sessions.insert(3u64, "host-c", Duration::from_secs(30)),
//!     Err(Error::CapacityExceeded { .. })
//! ));
//!
//! clock.advance(Duration::from_secs(31));
//! assert_eq!(sessions.get(&1), Err(Error::Expired)); // invisible before any sweep
//! assert_eq!(sessions.sweep().len(), 2);              // reclaimed by the sweep
//! sessions.insert(3u64, "host-c", Duration::from_secs(30))?;
//! # Ok::<(), Error>(())
//! ```
//!
//! See `docs/ARCHITECTURE.md` for the design and `docs/adr/` for the
//! decisions behind it.

mod config;
#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(not(relaystore_loom))]
mod driver;
mod engine;
mod error;
pub mod events;
#[cfg(relaystore_loom)]
#[doc(hidden)]
pub mod faults;
#[cfg(not(relaystore_loom))]
mod faults;
mod ids;
#[cfg(relaystore_loom)]
#[doc(hidden)]
pub mod model;
pub mod quota;
mod record;
mod shard;
mod store;
mod sync;
mod table;
pub mod time;
mod ttl;
pub mod wheel;

pub use config::{QuotaPolicy, StoreConfig, TenantQuota, UniformQuota};
#[cfg(not(relaystore_loom))]
pub use driver::{ExpiryDriver, Sweep};
pub use engine::{Engine, Events};
pub use error::{Error, Result, Scope};
pub use ids::{AttemptId, JoinToken, LeaseId, ParseIdError, TenantId, TOKEN_SECRET_BYTES};
pub use record::{Stamp, CAS_ATTEMPTS_MAX, DEADLINE_MAX_MS};
pub use store::{
    Admission, AuditError, Binding, Cursor, DegradedReason, EndpointSeen, Health, JoinTicket,
    LeaseGrant, LeaseInfo, ListingInfo, LockGuard, LockInfo, Page, PresenceInfo, Renewal, Stats,
    Store, StoreBuilder, EXPIRY_TICK_DEFAULT, RESERVED_PREFIX,
};
pub use ttl::{Removed, TtlConfig, TtlMap};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
