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
//! # In a tokio relay
//!
//! A `Store` is a synchronous handle whose operations finish before they
//! return and never block, so async code calls them without `.await`; only
//! waits are futures (`Subscription::recv`, `Listener::recv`,
//! `Follower::next`, [`Store::claim_wait`], [`Store::drained`]), each with a
//! thread-blocking `blocking_*` twin for threads of your own.
//! `examples/rendezvous.rs` is a whole UDP relay built this way.
//!
//! ```
//! use relaystore::events::Received;
//! use relaystore::{Error, Store, TenantId};
//! use std::time::Duration;
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Error> {
//!     let store = Store::builder().build()?;
//!     let game = TenantId(1);
//!     let events = store.subscribe()?;
//!     let lease = store.grant(game, "host-a", Duration::from_secs(30), None)?;
//!     store.publish(game, lease.id, "lobby-1", b"mode=ffa", None)?;
//!     let ticket = store.begin_join(game, "lobby-1", "client-7", Duration::from_secs(10), None)?;
//!     let token = ticket.token.to_string();            // to the client, as text
//!     let token = token.parse().expect("the token it sent back");
//!     store.bind_endpoint(game, ticket.attempt, &token, "203.0.113.9:4000".parse().unwrap())?;
//!     store.consume(game, &token, None)?;                    // admitted, exactly once
//!     assert_eq!(store.consume(game, &token, None), Err(Error::ReplayRejected));
//!     store.revoke(game, lease.id)?;                   // the listing goes with it
//!     assert_eq!(store.get_listing(game, "lobby-1"), Err(Error::NotFound));
//!     assert!(matches!(events.recv().await, Ok(Received::Event(_))));
//!     // On SIGTERM: refuse new work, let the rest finish, then exit.
//!     store.begin_drain(Duration::from_millis(10))?;
//!     store.drained().await;
//!     Ok(())
//! }
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
//! [`Error::BackendUnavailable`]). A [`Store`] serves it as a
//! [`MemoryEngine`] (`store.engine()`), with futures that complete at
//! once, and keeps its synchronous methods, under the same names, as the
//! fast path: the store itself implements none of the traits, so a name
//! has one calling convention on each type.
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
//! - `native` (default): what needs an operating system: the background
//!   expiry driver, the blocking waits, `SystemClock`. Off, the store
//!   builds for `wasm32-unknown-unknown` (the host supplies the clock and
//!   calls `sweep`; waits are the async ones).
//! - `metrics` (default): counters, gauges and histograms through the
//!   `metrics` facade, every series described and present from the start.
//! - `redis`: the Redis engine (`relaystore::redis::RedisEngine`), on tokio.
//! - `redis-tls`: the Redis engine over TLS (`rediss://` URLs, rustls with
//!   the ring provider; the server's certificate checked against the
//!   system's roots or `RedisOptions::tls_root_certificates`).
//! - `serde`: `Serialize`/`Deserialize` for the values a relay puts on the
//!   wire: ids and tokens as their text forms, tenants as numbers, grants,
//!   tickets, bindings, admissions, listings, presence, pages, removal
//!   events and health.
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
/// Time as an input: the [`Clock`](time::Clock) trait, the production
/// [`SystemClock`](time::SystemClock), the test's
/// [`ManualClock`](time::ManualClock) and, with the `native` feature,
/// the coarse `CoarseClock`, read from a word its thread keeps current
/// (ADR 0079). Every expiry decision is made on a
/// [`MonoTime`](time::MonoTime); the wall clock only reports.
pub mod time {
    #[cfg(feature = "native")]
    pub use crate::base::coarse_clock::{CoarseClock, COARSE_TICK_MAX, COARSE_TICK_MIN};
    pub use crate::base::time::*;
}

#[cfg(feature = "metrics")]
pub mod metrics {
    //! What a store reports through the `metrics` facade (feature
    //! `metrics`, on by default): install any recorder (e.g.
    //! `metrics-exporter-prometheus`) and the series below appear. Every
    //! metric is described (`# HELP`, with its unit) when a store is built,
    //! and every counter and gauge series exists from then on, at 0 until
    //! first set (the gauges are set by the first sweep; the histograms
    //! appear with their first sample).
    //!
    //! | metric | kind | unit | labels | when |
    //! | --- | --- | --- | --- | --- |
    //! | `relaystore_admissions_total` | counter | records | `engine`, `collection` | a record created |
    //! | `relaystore_refusals_total` | counter | refusals | `engine`, `scope`, `collection` | any `CapacityExceeded` (every one, not rate-limited) |
    //! | `relaystore_removals_total` | counter | records | `engine`, `collection`, `cause` | every removal event |
    //! | `relaystore_records` | gauge | records | `engine`, `collection` | records held, set by the sweep at most once a second (store clock) |
    //! | `relaystore_sweep_duration_seconds` | histogram | seconds | `engine` | each sweep |
    //! | `relaystore_sweep_removed` | histogram | records | `engine` | records each sweep removed |
    //! | `relaystore_expiry_lag_seconds` | histogram | seconds | `engine` | per expired record: from its deadline to its removal (store clock) |
    //! | `relaystore_events_dropped_total` | counter | events | `engine` | events dropped for a lagging subscriber |
    //! | `relaystore_subscribers` | gauge | subscriptions | `engine` | event subscriptions held; set with `relaystore_records` |
    //! | `relaystore_subscriber_backlog` | gauge | events | `engine` | the most events buffered for one subscriber (the slowest reader's lag); set with `relaystore_records` |
    //! | `relaystore_health` | gauge | | `engine`, `state` | 1 for the store's state (`ready`, `degraded`, `draining`, `stopped`), 0 for the others; set by the sweep when it changes, and once a second |
    //!
    //! `engine` is `memory` for the in-memory store and `redis` for a Redis
    //! engine handle, which reports what it sees: the refusals its server
    //! answered (`relaystore_refusals_total`), the removals its own calls
    //! and its sweeper made (`relaystore_removals_total`: each counted once,
    //! by the handle that made it), `relaystore_health` whenever `health()`
    //! is asked, its sweeper's passes (`relaystore_sweep_duration_seconds`),
    //! and its subscribers (`relaystore_events_dropped_total`,
    //! `relaystore_subscribers` and `relaystore_subscriber_backlog`, set every
    //! `sweep_interval`). It does not report admissions, records held, the
    //! records a sweep removed or expiry lag: those are counted on the
    //! server, where `usage` and `ceiling_usage` read them.
    //!
    //! `collection` is a collection's name (`leases`, `listings`,
    //! `presence`, ...); `cause` a removal's (`expired`, `revoked`,
    //! `cascaded`, `released`, `consumed`, `drained`); `scope` the kind of
    //! limit (`collection`, `tenant`, `holder`, `parent`, `tenants`, `queue_jobs`,
    //! ...), with `collection` the collection it bounds, or empty.
    //!
    //! Histograms are recorded as samples; how they are exported is the
    //! recorder's choice. [`HISTOGRAMS`] gives the bucket bounds each is
    //! meant for; with `metrics-exporter-prometheus`, pass them to
    //! `set_buckets_for_metric` so Prometheus gets `_bucket` series rather
    //! than a summary:
    //!
    //! ```
    //! use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    //!
    //! let mut builder = PrometheusBuilder::new();
    //! for (name, buckets) in relaystore::metrics::HISTOGRAMS {
    //!     builder = builder.set_buckets_for_metric(Matcher::Full(name.into()), buckets)?;
    //! }
    //! let handle = builder.install_recorder()?;
    //! let store = relaystore::Store::builder().build()?;
    //! store.sweep();
    //! assert!(handle.render().contains("relaystore_sweep_duration_seconds_bucket{engine=\"memory\",le=\"0.001\"}"));
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use crate::contract::metrics::HISTOGRAMS;
}

pub mod events {
    //! Removal events: every physical removal of a record is announced to
    //! the subscribers ([`Subscription`]) of the engine that removed it. The
    //! vocabulary ([`Event`], [`Cause`], [`RecordId`], [`Received`]) is the
    //! same on every engine.
    pub use crate::contract::events::{
        Cause, Collection, Event, Gap, Received, RecordId, RecvError, Root,
    };
    pub use crate::mem::events::{RecvFuture, Subscription};
}

pub mod queue {
    //! Job queues: at-least-once work with claims, bounded retries
    //! (equal-jitter [`Backoff`]) and a dead-letter set.
    pub use crate::contract::queue::{
        Backoff, ClaimToken, ClaimedJob, Failed, Jitter, JobInfo, JobOptions, JobState,
        QueueConfig, QueueInfo, Unique, UniqueStates, PRIORITY_MAX,
    };
}

pub mod schedule {
    //! Interval schedules: `@every <interval>` fires that enqueue a job, run
    //! by whichever runner holds the tenant's scheduler lock.
    pub use crate::contract::rules::parse_every;
    pub use crate::contract::schedule::{ScheduleInfo, ScheduleRun};
}

pub mod stream {
    //! Streams: per-tenant append-only logs with offsets, explicit
    //! retention, named consumers with committed offsets, and consumer
    //! groups with pending lists.
    pub use crate::contract::group::{
        Claimed, GroupConfig, GroupEntry, GroupInfo, GroupRead, GroupStart, PendingEntry,
    };
    pub use crate::contract::stream::{
        StreamConfig, StreamEntry, StreamInfo, StreamRead, WhenFull,
    };
    pub use crate::store::{Follower, Member};
}

pub mod wake {
    //! Wake channels: `notify(tenant, channel)` wakes every listener of
    //! that channel attached before the call, once per notify, through a
    //! bounded queue per listener.
    pub use crate::contract::events::RecvError;
    pub use crate::contract::wake::{Missed, Wake};
    pub use crate::mem::wake::{Listener, WakeFuture};
}
#[cfg(feature = "internals")]
pub use mem::{quota, wheel};

pub use base::attrs::Attrs;
pub use base::collection::{Kind, ParseNameError, KINDS_MAX};
pub use base::error::{ConflictReason, Error, Result, Scope, Unavailable};
pub use base::ids::{
    AttemptId, JobId, JoinToken, LeaseId, ParseIdError, TenantId, TOKEN_SECRET_BYTES,
};
pub use base::name::{Holder, Name};
#[cfg(feature = "internals")]
pub use base::time::DEADLINE_MAX_MS;
pub use contract::config::{
    QuotaPolicy, StoreConfig, TenantQuota, UniformQuota, SCHEDULE_CATCH_UP_MAX,
};
pub use contract::engine::{
    Engine, Events, Follow, GroupMember, RelayEngine, StreamEngine, WakeEngine, Wakes,
};
pub use contract::kinds::{RecordKind, KIND_NAME_BYTES_MAX};
pub use contract::lifecycle::{DegradedReason, Health};
pub use contract::names::{OUTBOX_QUEUE, RESERVED_PREFIX, SCHEDULER_LOCK};
pub use contract::outbox::{outbox_config, OutboxMessage, OutboxRun};
pub use contract::queue::ClaimedJob;
pub use contract::queue::DeadLetter;
pub use contract::relay::{
    Admission, AttemptInfo, AttemptState, Binding, Cursor, EndpointSeen, JoinTicket, LeaseGrant,
    LeaseInfo, ListingInfo, LockInfo, Page, PresenceInfo, RecordInfo, Renewal,
};
pub use contract::runner::ScheduleRunner;
pub use contract::runner::SchedulerStep;
pub use contract::tx::{TxApplied, TxBatch, TxOp, TxOutcome};
pub use contract::usage::{TenantUsage, Usage};
#[cfg(all(feature = "internals", not(relaystore_loom)))]
#[cfg(feature = "native")]
pub use mem::driver::{ExpiryDriver, Sweep};
#[cfg(feature = "internals")]
pub use mem::record::{Stamp, CAS_ATTEMPTS_MAX};
#[cfg(feature = "internals")]
pub use mem::ttl::{Removed, TtlConfig, TtlMap};
#[cfg(feature = "internals")]
pub use store::AuditError;
pub use store::{Committed, Transaction, TX_OPS_MAX};
pub use store::{
    LockGuard, MemoryEngine, Scheduler, SchedulerStop, Stats, Store, StoreBuilder,
    EXPIRY_TICK_DEFAULT, LEASE_SLOTS_PER_ITEM, REFUSAL_LOG_INTERVAL,
};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
