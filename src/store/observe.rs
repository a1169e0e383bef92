//! What the store tells an operator through `tracing`: refusals (with the
//! tenant, the limit and its use; at most one event per
//! [`REFUSAL_LOG_INTERVAL`], with a count of those left out; from record
//! creations, stream creations, appends and commits, and wake listens),
//! a stalled
//! expiry driver and its recovery, and the start of each incarnation. The
//! spans of sweeps, drains and tenant revocations are opened where those
//! run. Nothing here prints: without a subscriber installed, each call is
//! a check of a cached flag.

use super::{Collection, Store};
use crate::base::error::{Error, Result, Scope};
use crate::base::ids::TenantId;
use crate::base::sync::{AtomicBool, AtomicU64, Ordering};
use crate::base::time::MonoTime;
use std::time::Duration;

/// Refusal events are logged at most once per this interval (store
/// clock); the next one logged counts those left out in between.
pub const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// The store's observation state.
pub(crate) struct Observe {
    /// When a refusal was last logged (ms on the store clock), or
    /// `u64::MAX` if never.
    refusal_logged_ms: AtomicU64,
    /// Refusals left out since the last one logged.
    refusals_skipped: AtomicU64,
    /// A stalled driver was reported and has not recovered since.
    stall_reported: AtomicBool,
    /// When the gauges were last set (ms on the store clock; `u64::MAX`
    /// if never), and the health they reported.
    gauges_at_ms: AtomicU64,
    gauges_health: AtomicU64,
}

/// How often the sweep sets the metrics gauges (store clock), unless
/// health changes sooner.
pub(crate) const GAUGE_INTERVAL: Duration = Duration::from_secs(1);

impl Observe {
    pub(crate) fn new() -> Self {
        Observe {
            refusal_logged_ms: AtomicU64::new(u64::MAX),
            refusals_skipped: AtomicU64::new(0),
            stall_reported: AtomicBool::new(false),
            gauges_at_ms: AtomicU64::new(u64::MAX),
            gauges_health: AtomicU64::new(u64::MAX),
        }
    }

    /// Whether the gauges are due at `now` with health `health`; if so,
    /// records that they are being set.
    pub(crate) fn gauges_due(&self, now: MonoTime, health: u8) -> bool {
        let now_ms = now.as_millis();
        let last = self.gauges_at_ms.load(Ordering::Acquire);
        let interval = GAUGE_INTERVAL.as_millis() as u64;
        let changed =
            self.gauges_health.swap(u64::from(health), Ordering::AcqRel) != u64::from(health);
        let due = last == u64::MAX || now_ms.saturating_sub(last) >= interval;
        if changed || due {
            self.gauges_at_ms.store(now_ms, Ordering::Release);
        }
        changed || due
    }
}

impl Store {
    /// `result`, with a refusal of `tenant`'s work for capacity logged: the
    /// one way every refusing path reports.
    pub(super) fn observed<T>(&self, tenant: TenantId, result: Result<T>) -> Result<T> {
        if let Err(Error::CapacityExceeded { scope, .. }) = &result {
            crate::contract::metrics::refusal(
                crate::contract::metrics::EngineLabel::Memory,
                *scope,
            );
            self.observe_refusal(tenant, *scope, self.shared.clock.now());
        }
        result
    }

    /// Logs a refusal of `tenant`'s work by `scope` (rate-limited).
    fn observe_refusal(&self, tenant: TenantId, scope: Scope, now: MonoTime) {
        if !tracing::enabled!(tracing::Level::INFO) {
            return;
        }
        let o = &self.shared.observe;
        let now_ms = now.as_millis();
        let last = o.refusal_logged_ms.load(Ordering::Acquire);
        let due = last == u64::MAX
            || now_ms.saturating_sub(last) >= REFUSAL_LOG_INTERVAL.as_millis() as u64;
        if !due
            || o.refusal_logged_ms
                .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            o.refusals_skipped.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let skipped = o.refusals_skipped.swap(0, Ordering::AcqRel);
        let usage = match scope {
            Scope::Tenant(c) => self.usage(tenant).of(c),
            Scope::Collection(c) => self.ceiling_usage(c),
            _ => None,
        };
        tracing::info!(
            tenant = tenant.0,
            scope = %scope,
            limit = usage.map(|u| u.limit),
            used = usage.map(|u| u.used),
            refusals_not_logged = skipped,
            "relaystore refused new work: {scope} reached",
        );
    }

    /// The use of the store-wide ceiling on `c`.
    fn ceiling_usage(&self, c: Collection) -> Option<super::Usage> {
        let counter = match c {
            Collection::Leases => self.shared.leases.ceiling(),
            Collection::Listings => self.shared.listings.ceiling(),
            Collection::Presence => self.shared.presence.ceiling(),
            Collection::Attempts => &self.shared.pending,
            Collection::Replay => self.shared.attempts.ceiling(),
            Collection::Idempotency => self.shared.idempotency.ceiling(),
            Collection::Tombstones => self.shared.tombstones.ceiling(),
            Collection::Locks => self.shared.locks.ceiling(),
            Collection::Records => self.shared.records.ceiling(),
            Collection::Streams | Collection::Queues | Collection::Schedules => return None,
        };
        Some(super::Usage {
            used: counter.used(),
            limit: counter.limit(),
        })
    }

    /// Reports, once, that the sweep has not run for longer than
    /// `driver_stall_max` (`lag` since it last ran).
    pub(super) fn observe_stall(&self, lag: Duration) {
        if !self
            .shared
            .observe
            .stall_reported
            .swap(true, Ordering::AcqRel)
        {
            tracing::warn!(
                lag_ms = lag.as_millis() as u64,
                driver_stall_max_ms = self.shared.config.driver_stall_max.as_millis() as u64,
                "relaystore expiry driver stalled: joins, binds and consumes are refused until it sweeps again",
            );
        }
    }

    /// Reports that a sweep ran after a reported stall.
    pub(super) fn observe_sweep_ran(&self) {
        if self
            .shared
            .observe
            .stall_reported
            .swap(false, Ordering::AcqRel)
        {
            tracing::info!("relaystore expiry driver recovered: sweeping again");
        }
    }
}
