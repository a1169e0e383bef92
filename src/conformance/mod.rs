//! The conformance suite: the behaviour SPEC §4–§8 promises, written once
//! against the [`Engine`] contract, so every engine runs the same checks.
//!
//! An engine's tests implement [`Harness`] (how to make a fresh engine with
//! given limits, and how to let time pass) and call [`run`], which returns
//! every check that failed. An engine that serves only the relay records
//! ([`RelayEngine`]) runs [`run_relay`], the checks in [`RELAY_CHECKS`].
//! An engine with wake channels and streams runs [`run_wakes`] and
//! [`run_streams`] besides, and one with queues [`run_queues`] (or all of
//! it, [`run`]).
//! [`InMemory`] is the harness of the in-memory engine;
//! `tests/conformance.rs` runs it, and runs a deliberately broken engine to
//! show the suite catches it; `tests/redis_conformance_*.rs` run it on the
//! Redis engine.
//!
//! # Time
//!
//! The checks never read a clock. Every TTL is a multiple of the harness's
//! [`unit`](Harness::unit), and time passes only through
//! [`advance`](Harness::advance). The in-memory harness moves a
//! [`ManualClock`](crate::base::time::ManualClock) (unit: one second, no real
//! waiting, exact). A remote engine, whose deadlines come from its server's
//! clock, uses a short real unit (tens of milliseconds) and sleeps in
//! `advance`, then waits until its sweeper has run; checks that depend on
//! time only assert what holds after the deadline has certainly passed
//! (`Expired` or, once swept, `NotFound`), never what holds at an instant.
//!
//! Each check runs on fresh engines, in sequence; the futures need no
//! particular executor.

mod groups;
mod harness;
mod joins;
mod leases;
mod lifecycle;
mod limits;
mod listings;
mod locks;
mod queues;
mod records;
mod streams;
mod tx;
mod wakes;

/// The tables of the contract's formulas (the schedule grid's catch-up
/// step, the claim-validity rule, the backoff delay), with the one right
/// answer per row: an engine that computes them itself (the Redis engine's
/// Lua library) is held to the same rows.
pub use crate::contract::rules::tables as rule_tables;

pub use harness::InMemory;

use crate::base::error::Error;
use crate::contract::config::StoreConfig;
use crate::contract::engine::{Engine, RelayEngine, StreamEngine, WakeEngine};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// How the suite gets engines and moves time for one engine kind.
pub trait Harness {
    /// The engine under test.
    type Engine: RelayEngine;

    /// The suite's unit of time: every TTL it uses is a whole multiple.
    fn unit(&self) -> Duration;

    /// A fresh, empty engine that enforces `config`'s limits, with an
    /// incarnation of its own.
    fn engine(&self, config: StoreConfig) -> impl Future<Output = Result<Self::Engine, Error>>;

    /// Lets `elapsed` pass for every engine this harness made, then returns
    /// once the expiry that became due has run and its removal events are
    /// buffered for subscribers.
    fn advance(&self, elapsed: Duration) -> impl Future<Output = ()>;
}

/// A check that failed: its name and what it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The check, as `area::name`.
    pub check: &'static str,
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check, self.reason)
    }
}

/// Why one check failed; `?` on an engine error turns it into one.
#[derive(Debug)]
pub(crate) struct Fault(String);

impl From<Error> for Fault {
    fn from(e: Error) -> Self {
        Fault(format!("unexpected error: {e:?}"))
    }
}

impl Fault {
    pub(crate) fn new(reason: String) -> Self {
        Fault(reason)
    }
}

pub(crate) type Outcome = Result<(), Fault>;

/// Fails the check with a message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err($crate::conformance::Fault::new(format!($($msg)+)));
        }
    };
}

/// Fails the check unless both sides are equal, showing both.
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($msg:tt)+) => {
        match (&$left, &$right) {
            (l, r) => {
                if l != r {
                    return Err($crate::conformance::Fault::new(format!(
                        "{}: got {:?}, expected {:?}",
                        format!($($msg)+),
                        l,
                        r
                    )));
                }
            }
        }
    };
}
pub(crate) use {ensure, ensure_eq};

/// The checks of the relay records (leases, endpoints, listings, presence,
/// joins, locks, records of declared kinds, limits, cascades, tenants, restarts, drain, removal
/// events), in the order
/// [`run_relay`] runs them.
pub const RELAY_CHECKS: &[&str] = &[
    "leases::grant_renew_get_revoke",
    "leases::holders_of_every_length",
    "leases::fences_increase",
    "leases::expiry",
    "leases::endpoints",
    "leases::ids_travel",
    "leases::pages",
    "listings::publish_update_unpublish",
    "listings::visible_only_under_a_live_lease",
    "listings::pages",
    "listings::presence",
    "joins::bind_then_consume_once",
    "joins::concurrent_consumes",
    "joins::errors",
    "joins::idempotency",
    "joins::consume_retried_with_a_key",
    "joins::inspection",
    "locks::exclusive_and_fenced",
    "locks::attached_to_a_lease",
    "records::put_get_list_remove",
    "records::limits",
    "records::lifecycle",
    "limits::bad_input",
    "limits::tenant_quota",
    "limits::holder_quota",
    "limits::ceilings",
    "limits::parent_caps",
    "limits::isolation",
    "limits::usage",
    "limits::run_time_limits",
    "limits::tenants_ceiling",
    "lifecycle::cascade",
    "lifecycle::revoke_tenant",
    "lifecycle::restart",
    "lifecycle::drain",
    "lifecycle::events",
    "lifecycle::event_details",
    "lifecycle::revoke_tenant_events",
    "lifecycle::tombstone_end",
    "lifecycle::expired_memories",
];

/// The checks of wake channels, for any [`WakeEngine`],
/// in the order [`run_wakes`] runs them (the first of [`ENGINE_CHECKS`]).
pub const WAKE_CHECKS: &[&str] = &[
    "wakes::notify_and_listen",
    "wakes::channel_names",
    "wakes::a_full_queue_drops_the_oldest",
    "wakes::drained_closes_listeners",
];

/// The checks of streams, for any [`StreamEngine`], in the order
/// [`run_streams`] runs them.
pub const STREAM_CHECKS: &[&str] = &[
    "streams::offsets_and_retention",
    "streams::consumers_and_followers",
    "streams::lifetimes",
    "streams::append_retried_with_a_key",
    "groups::deliveries_and_acks",
    "groups::idle_claims_and_dead_entries",
    "groups::members_join_and_read",
];

/// The checks of job queues, the outbox and schedules, for any
/// [`Engine`], in the order [`run_queues`] runs them.
pub const QUEUE_CHECKS: &[&str] = &[
    "queues::claims_and_acks",
    "queues::retries_and_dead_letters",
    "queues::lapses_and_delays",
    "queues::lapses_seen_by_every_call",
    "queues::outbox_and_schedules",
    "queues::catch_up_fills_what_fits",
    "queues::claims_extend",
    "queues::snooze_gives_the_attempt_back",
    "queues::batches_all_or_none",
    "queues::acks_in_batches",
    "queues::cancel_removes_a_job",
    "queues::enqueue_retried_with_a_key",
    "queues::jobs_run_at",
    "queues::priorities",
    "queues::unique_jobs",
    "queues::schedule_repeated_keeps_its_grid",
];

/// The checks of transactions, for any [`Engine`], in the order
/// [`run_tx`] runs them.
pub const TX_CHECKS: &[&str] = &[
    "tx::all_or_nothing",
    "tx::refusals_are_the_operations",
    "tx::claims_settle_together",
];

/// The checks [`run`] adds to [`RELAY_CHECKS`] (wake channels, streams,
/// queues, outbox, schedules, transactions), in its order:
/// [`WAKE_CHECKS`], [`STREAM_CHECKS`], [`QUEUE_CHECKS`], then
/// [`TX_CHECKS`].
pub const ENGINE_CHECKS: &[&str] = &[
    "wakes::notify_and_listen",
    "wakes::channel_names",
    "wakes::a_full_queue_drops_the_oldest",
    "wakes::drained_closes_listeners",
    "streams::offsets_and_retention",
    "streams::consumers_and_followers",
    "streams::lifetimes",
    "streams::append_retried_with_a_key",
    "groups::deliveries_and_acks",
    "groups::idle_claims_and_dead_entries",
    "groups::members_join_and_read",
    "queues::claims_and_acks",
    "queues::retries_and_dead_letters",
    "queues::lapses_and_delays",
    "queues::lapses_seen_by_every_call",
    "queues::outbox_and_schedules",
    "queues::catch_up_fills_what_fits",
    "queues::claims_extend",
    "queues::snooze_gives_the_attempt_back",
    "queues::batches_all_or_none",
    "queues::acks_in_batches",
    "queues::cancel_removes_a_job",
    "queues::enqueue_retried_with_a_key",
    "queues::jobs_run_at",
    "queues::priorities",
    "queues::unique_jobs",
    "queues::schedule_repeated_keeps_its_grid",
    "tx::all_or_nothing",
    "tx::refusals_are_the_operations",
    "tx::claims_settle_together",
];

/// Runs one check on `$harness`, pushing its failure onto `$failures`.
macro_rules! check {
    ($harness:ident, $failures:ident, $list:ident, $area:ident :: $name:ident) => {
        check!($harness, $failures, $list, $area::$name, |_: &str| true);
    };
    ($harness:ident, $failures:ident, $list:ident, $area:ident :: $name:ident, $keep:expr) => {
        let name = concat!(stringify!($area), "::", stringify!($name));
        debug_assert!($list.contains(&name));
        if $keep(name) {
            if let Err(Fault(reason)) = $area::$name($harness).await {
                $failures.push(Failure {
                    check: name,
                    reason,
                });
            }
        }
    };
}

/// Runs the checks of the relay records ([`RELAY_CHECKS`]) against engines
/// from `harness`; returns the failures (empty when the engine conforms).
pub async fn run_relay<H: Harness>(harness: &H) -> Vec<Failure> {
    run_relay_where(harness, |_| true).await
}

/// Runs the checks of [`RELAY_CHECKS`] whose name `keep` accepts (so that
/// an engine whose checks wait real time can run them from several test
/// binaries); returns their failures.
pub async fn run_relay_where<H: Harness>(harness: &H, keep: impl Fn(&str) -> bool) -> Vec<Failure> {
    let mut failures = Vec::new();
    let h = harness;
    check!(
        h,
        failures,
        RELAY_CHECKS,
        leases::grant_renew_get_revoke,
        &keep
    );
    check!(
        h,
        failures,
        RELAY_CHECKS,
        leases::holders_of_every_length,
        &keep
    );
    check!(h, failures, RELAY_CHECKS, leases::fences_increase, &keep);
    check!(h, failures, RELAY_CHECKS, leases::expiry, &keep);
    check!(h, failures, RELAY_CHECKS, leases::endpoints, &keep);
    check!(h, failures, RELAY_CHECKS, leases::ids_travel, &keep);
    check!(h, failures, RELAY_CHECKS, leases::pages, &keep);
    check!(
        h,
        failures,
        RELAY_CHECKS,
        listings::publish_update_unpublish,
        &keep
    );
    check!(
        h,
        failures,
        RELAY_CHECKS,
        listings::visible_only_under_a_live_lease,
        &keep
    );
    check!(h, failures, RELAY_CHECKS, listings::pages, &keep);
    check!(h, failures, RELAY_CHECKS, listings::presence, &keep);
    check!(
        h,
        failures,
        RELAY_CHECKS,
        joins::bind_then_consume_once,
        &keep
    );
    check!(h, failures, RELAY_CHECKS, joins::concurrent_consumes, &keep);
    check!(h, failures, RELAY_CHECKS, joins::errors, &keep);
    check!(h, failures, RELAY_CHECKS, joins::idempotency, &keep);
    check!(
        h,
        failures,
        RELAY_CHECKS,
        joins::consume_retried_with_a_key,
        &keep
    );
    check!(h, failures, RELAY_CHECKS, joins::inspection, &keep);
    check!(
        h,
        failures,
        RELAY_CHECKS,
        locks::exclusive_and_fenced,
        &keep
    );
    check!(h, failures, RELAY_CHECKS, locks::attached_to_a_lease, &keep);
    check!(
        h,
        failures,
        RELAY_CHECKS,
        records::put_get_list_remove,
        &keep
    );
    check!(h, failures, RELAY_CHECKS, records::limits, &keep);
    check!(h, failures, RELAY_CHECKS, records::lifecycle, &keep);
    check!(h, failures, RELAY_CHECKS, limits::bad_input, &keep);
    check!(h, failures, RELAY_CHECKS, limits::tenant_quota, &keep);
    check!(h, failures, RELAY_CHECKS, limits::holder_quota, &keep);
    check!(h, failures, RELAY_CHECKS, limits::ceilings, &keep);
    check!(h, failures, RELAY_CHECKS, limits::parent_caps, &keep);
    check!(h, failures, RELAY_CHECKS, limits::isolation, &keep);
    check!(h, failures, RELAY_CHECKS, limits::usage, &keep);
    check!(h, failures, RELAY_CHECKS, limits::run_time_limits, &keep);
    check!(h, failures, RELAY_CHECKS, limits::tenants_ceiling, &keep);
    check!(h, failures, RELAY_CHECKS, lifecycle::cascade, &keep);
    check!(h, failures, RELAY_CHECKS, lifecycle::revoke_tenant, &keep);
    check!(h, failures, RELAY_CHECKS, lifecycle::restart, &keep);
    check!(h, failures, RELAY_CHECKS, lifecycle::drain, &keep);
    check!(h, failures, RELAY_CHECKS, lifecycle::events, &keep);
    check!(h, failures, RELAY_CHECKS, lifecycle::event_details, &keep);
    check!(
        h,
        failures,
        RELAY_CHECKS,
        lifecycle::revoke_tenant_events,
        &keep
    );
    check!(h, failures, RELAY_CHECKS, lifecycle::tombstone_end, &keep);
    check!(
        h,
        failures,
        RELAY_CHECKS,
        lifecycle::expired_memories,
        &keep
    );
    failures
}

/// Runs the checks of wake channels ([`WAKE_CHECKS`]) against engines
/// from `harness`; returns the failures (empty when the engine conforms).
pub async fn run_wakes<H: Harness>(harness: &H) -> Vec<Failure>
where
    H::Engine: WakeEngine,
{
    let mut failures = Vec::new();
    let h = harness;
    check!(h, failures, WAKE_CHECKS, wakes::notify_and_listen);
    check!(h, failures, WAKE_CHECKS, wakes::channel_names);
    check!(
        h,
        failures,
        WAKE_CHECKS,
        wakes::a_full_queue_drops_the_oldest
    );
    check!(h, failures, WAKE_CHECKS, wakes::drained_closes_listeners);
    failures
}

/// Runs the checks of streams ([`STREAM_CHECKS`]) against engines from
/// `harness`; returns the failures (empty when the engine conforms).
pub async fn run_streams<H: Harness>(harness: &H) -> Vec<Failure>
where
    H::Engine: StreamEngine,
{
    let mut failures = Vec::new();
    let h = harness;
    check!(h, failures, STREAM_CHECKS, streams::offsets_and_retention);
    check!(h, failures, STREAM_CHECKS, streams::consumers_and_followers);
    check!(h, failures, STREAM_CHECKS, streams::lifetimes);
    check!(
        h,
        failures,
        STREAM_CHECKS,
        streams::append_retried_with_a_key
    );
    check!(h, failures, STREAM_CHECKS, groups::deliveries_and_acks);
    check!(
        h,
        failures,
        STREAM_CHECKS,
        groups::idle_claims_and_dead_entries
    );
    check!(h, failures, STREAM_CHECKS, groups::members_join_and_read);
    failures
}

/// Runs every check ([`RELAY_CHECKS`], then [`ENGINE_CHECKS`]) against
/// engines from `harness`; returns the failures (empty when the engine
/// conforms).
pub async fn run<H: Harness>(harness: &H) -> Vec<Failure>
where
    H::Engine: Engine,
{
    let mut failures = run_relay(harness).await;
    failures.extend(run_wakes(harness).await);
    failures.extend(run_streams(harness).await);
    failures.extend(run_queues(harness).await);
    failures.extend(run_tx(harness).await);
    failures
}

/// Runs the checks of transactions ([`TX_CHECKS`]) against engines from
/// `harness`; returns the failures (empty when the engine conforms).
pub async fn run_tx<H: Harness>(harness: &H) -> Vec<Failure>
where
    H::Engine: Engine,
{
    let mut failures = Vec::new();
    let h = harness;
    check!(h, failures, TX_CHECKS, tx::all_or_nothing);
    check!(h, failures, TX_CHECKS, tx::refusals_are_the_operations);
    check!(h, failures, TX_CHECKS, tx::claims_settle_together);
    failures
}

/// Runs the checks of job queues, the outbox and schedules
/// ([`QUEUE_CHECKS`]) against engines from `harness`; returns the
/// failures (empty when the engine conforms).
pub async fn run_queues<H: Harness>(harness: &H) -> Vec<Failure>
where
    H::Engine: Engine,
{
    let mut failures = Vec::new();
    let h = harness;
    check!(h, failures, QUEUE_CHECKS, queues::claims_and_acks);
    check!(h, failures, QUEUE_CHECKS, queues::retries_and_dead_letters);
    check!(h, failures, QUEUE_CHECKS, queues::lapses_and_delays);
    check!(h, failures, QUEUE_CHECKS, queues::lapses_seen_by_every_call);
    check!(h, failures, QUEUE_CHECKS, queues::outbox_and_schedules);
    check!(h, failures, QUEUE_CHECKS, queues::catch_up_fills_what_fits);
    check!(h, failures, QUEUE_CHECKS, queues::claims_extend);
    check!(
        h,
        failures,
        QUEUE_CHECKS,
        queues::snooze_gives_the_attempt_back
    );
    check!(h, failures, QUEUE_CHECKS, queues::batches_all_or_none);
    check!(h, failures, QUEUE_CHECKS, queues::acks_in_batches);
    check!(h, failures, QUEUE_CHECKS, queues::cancel_removes_a_job);
    check!(
        h,
        failures,
        QUEUE_CHECKS,
        queues::enqueue_retried_with_a_key
    );
    check!(h, failures, QUEUE_CHECKS, queues::jobs_run_at);
    check!(h, failures, QUEUE_CHECKS, queues::priorities);
    check!(h, failures, QUEUE_CHECKS, queues::unique_jobs);
    check!(
        h,
        failures,
        QUEUE_CHECKS,
        queues::schedule_repeated_keeps_its_grid
    );
    failures
}

/// The limits every check starts from, scaled to the harness's unit:
/// small parent caps so refusals are reachable in a few calls.
pub(crate) fn config(unit: Duration) -> StoreConfig {
    StoreConfig {
        ttl_min: (unit / 100).max(Duration::from_millis(1)),
        ttl_max: unit * 3600,
        listings_per_lease_max: 3,
        attempts_per_listing_max: 2,
        endpoints_per_lease_max: 2,
        locks_per_lease_max: 2,
        presence_per_lease_max: 2,
        replay_grace: unit * 5,
        tombstone_ttl: unit * 60,
        idempotency_ttl: unit * 30,
        drain_window_max: unit * 3600,
        ..StoreConfig::default()
    }
}

/// Polls every future in turn until all are done: concurrent requests
/// without an executor of the suite's own.
pub(crate) async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(outputs.iter_mut().filter_map(Option::take).collect())
        }
    })
    .await
}
