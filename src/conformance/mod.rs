//! The conformance suite: the behaviour SPEC §4–§8 promises, written once
//! against the [`Engine`] contract, so every engine runs the same checks.
//!
//! An engine's tests implement [`Harness`] (how to make a fresh engine with
//! given limits, and how to let time pass) and call [`run`], which returns
//! every check that failed. [`InMemory`] is the harness of the in-memory
//! engine; `tests/conformance.rs` runs it, and runs a deliberately broken
//! engine to show the suite catches it.
//!
//! # Time
//!
//! The checks never read a clock. Every TTL is a multiple of the harness's
//! [`unit`](Harness::unit), and time passes only through
//! [`advance`](Harness::advance). The in-memory harness moves a
//! [`ManualClock`](crate::time::ManualClock) (unit: one second, no real
//! waiting, exact). A remote engine, whose deadlines come from its server's
//! clock, uses a short real unit (tens of milliseconds) and sleeps in
//! `advance`, then waits until its sweeper has run; checks that depend on
//! time only assert what holds after the deadline has certainly passed
//! (`Expired` or, once swept, `NotFound`), never what holds at an instant.
//!
//! Each check runs on fresh engines, in sequence; the futures need no
//! particular executor.

mod harness;
mod joins;
mod leases;
mod lifecycle;
mod limits;
mod listings;
mod locks;
mod queues;
mod streams;
mod wakes;

pub use harness::InMemory;

use crate::config::StoreConfig;
use crate::engine::Engine;
use crate::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// How the suite gets engines and moves time for one engine kind.
pub trait Harness {
    /// The engine under test.
    type Engine: Engine;

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

/// The names of every check, in the order [`run`] runs them.
pub const CHECKS: &[&str] = &[
    "leases::grant_renew_get_revoke",
    "leases::fences_increase",
    "leases::expiry",
    "leases::endpoints",
    "leases::ids_travel",
    "listings::publish_update_unpublish",
    "listings::visible_only_under_a_live_lease",
    "listings::pages",
    "listings::presence",
    "joins::bind_then_consume_once",
    "joins::concurrent_consumes",
    "joins::errors",
    "joins::idempotency",
    "locks::exclusive_and_fenced",
    "locks::attached_to_a_lease",
    "limits::bad_input",
    "limits::tenant_quota",
    "limits::ceilings_and_parent_caps",
    "limits::isolation",
    "lifecycle::cascade",
    "lifecycle::revoke_tenant",
    "lifecycle::events",
    "lifecycle::drain",
    "lifecycle::restart",
    "wakes::notify_and_listen",
    "wakes::channel_names",
    "streams::offsets_and_retention",
    "streams::consumers_and_followers",
    "streams::lifetimes",
    "queues::claims_and_acks",
    "queues::retries_and_dead_letters",
    "queues::lapses_and_delays",
    "queues::outbox_and_schedules",
];

/// Runs every check against engines from `harness`; returns the failures
/// (empty when the engine conforms).
pub async fn run<H: Harness>(harness: &H) -> Vec<Failure> {
    let mut failures = Vec::new();
    macro_rules! check {
        ($area:ident :: $name:ident) => {
            let name = concat!(stringify!($area), "::", stringify!($name));
            debug_assert!(CHECKS.contains(&name));
            if let Err(Fault(reason)) = $area::$name(harness).await {
                failures.push(Failure {
                    check: name,
                    reason,
                });
            }
        };
    }
    check!(leases::grant_renew_get_revoke);
    check!(leases::fences_increase);
    check!(leases::expiry);
    check!(leases::endpoints);
    check!(leases::ids_travel);
    check!(listings::publish_update_unpublish);
    check!(listings::visible_only_under_a_live_lease);
    check!(listings::pages);
    check!(listings::presence);
    check!(joins::bind_then_consume_once);
    check!(joins::concurrent_consumes);
    check!(joins::errors);
    check!(joins::idempotency);
    check!(locks::exclusive_and_fenced);
    check!(locks::attached_to_a_lease);
    check!(limits::bad_input);
    check!(limits::tenant_quota);
    check!(limits::ceilings_and_parent_caps);
    check!(limits::isolation);
    check!(lifecycle::cascade);
    check!(lifecycle::revoke_tenant);
    check!(lifecycle::events);
    check!(lifecycle::drain);
    check!(lifecycle::restart);
    check!(wakes::notify_and_listen);
    check!(wakes::channel_names);
    check!(streams::offsets_and_retention);
    check!(streams::consumers_and_followers);
    check!(streams::lifetimes);
    check!(queues::claims_and_acks);
    check!(queues::retries_and_dead_letters);
    check!(queues::lapses_and_delays);
    check!(queues::outbox_and_schedules);
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
