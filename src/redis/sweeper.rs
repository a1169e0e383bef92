//! The sweeper: Redis runs nothing when a deadline passes, so a handle
//! looks. The store's due index (`{ns}:due`, in the meta key's slot) holds
//! each tenant at its earliest deadline (`due` and `index_at` in
//! `lua/shared/40_events.lua` keep it low enough). Every handle runs a loop that
//! takes the sweeper lease when it is free; the holder, every
//! `sweep_interval`, takes the tenants due now and runs `sweep` on each
//! (what is due is removed and announced, and the tenant's next deadline
//! comes back), then moves the tenant in the index by compare-and-set, so
//! a write that lowered it meanwhile is not undone. Two sweepers at once
//! (a lease that lapsed under a slow holder) only repeat work: a record
//! leaves its index, and is announced, once. On a cluster the holder also
//! gives back, every `RECLAIM_EVERY` sweeps, budget room that no record
//! holds (`room.rs`).

use super::{scripts, Issued, Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::TenantId;
use crate::contract::metrics::EngineLabel;
use std::sync::Arc;
use std::time::Duration;

/// This engine's metrics label.
const REDIS: EngineLabel = EngineLabel::Redis;

/// Tenants taken from the due index at a time.
const TAKE: usize = 64;
/// Entries of each index one sweep of a tenant removes at most.
const PER_TENANT: u64 = 256;
/// Takes in one pass at most (a pass ends once nothing more is due).
const ROUNDS: usize = 16;

/// Starts the handle's sweeper loop.
pub(super) fn start(engine: &RedisEngine, interval: Duration) {
    let handle = Arc::downgrade(&engine.inner);
    let task = tokio::spawn(async move {
        let mut passes: u64 = 0;
        loop {
            tokio::time::sleep(interval).await;
            let Some(inner) = handle.upgrade() else {
                return;
            };
            let engine = RedisEngine { inner };
            if engine.lifecycle_health() == Some(crate::contract::lifecycle::Health::Stopped) {
                continue;
            }
            let (subscribers, backlog) = engine.inner.hub.backlog();
            crate::contract::metrics::subscribers(REDIS, subscribers, backlog);
            match engine.hold_sweeper_lease(interval * 10).await {
                Ok(true) => {
                    let started = std::time::Instant::now();
                    if let Err(e) = engine.sweep().await {
                        tracing::warn!(error = %e, "relaystore redis: a sweep failed");
                    }
                    // Its removals are counted as they are delivered.
                    crate::contract::metrics::sweep(REDIS, started.elapsed(), None);
                    passes += 1;
                    // Only a cluster takes budget room apart from writing
                    // its record (ADR 0033), so only a cluster can leak it.
                    if engine.inner.conn.is_cluster()
                        && passes.is_multiple_of(super::room::RECLAIM_EVERY)
                    {
                        if let Err(e) = engine.reclaim_budgets().await {
                            tracing::warn!(error = %e, "relaystore redis: reclaiming budget room failed");
                        }
                    }
                    if passes.is_multiple_of(super::tenant::FORGET_EVERY) {
                        if let Err(e) = engine.forget_idle_tenants().await {
                            tracing::warn!(error = %e, "relaystore redis: forgetting idle tenants failed");
                        }
                    }
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "relaystore redis: the sweeper lease"),
            }
        }
    });
    *engine
        .inner
        .sweeper
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = Some(task);
}

impl RedisEngine {
    fn meta_key(&self, what: &str) -> String {
        format!("{{{}}}:{what}", self.inner.namespace)
    }

    /// Takes or renews the sweeper lease for `length`; whether this
    /// handle holds it now.
    async fn hold_sweeper_lease(&self, length: Duration) -> Result<bool> {
        let held: i64 = self
            .inner
            .conn
            .call(
                scripts::SWEEPER,
                &self.meta_key("sweeper"),
                scripts::SweeperArgs {
                    holder: format!("{:x}", self.inner.origin).into(),
                    ttl: crate::base::time::duration_to_millis_ceil(length).into(),
                }
                .encode(),
            )
            .await?;
        Ok(held == 1)
    }

    /// Lowers `tenant`'s place in the due index to `deadline` (a write set
    /// an earlier deadline than the index had). A failure is logged, not
    /// returned: the write itself succeeded, and the tenant's next write
    /// after the index's deadline asks again (`due` in `lua/shared/40_events.lua`).
    pub(super) async fn lower_due(&self, tenant: TenantId, deadline: u64) {
        let lowered: Result<i64> = self
            .inner
            .conn
            .call(
                scripts::DUE_LOWER,
                &self.meta_key("due"),
                scripts::DueLowerArgs {
                    tenant: tenant.0.into(),
                    deadline: deadline.into(),
                }
                .encode(),
            )
            .await;
        if let Err(e) = lowered {
            tracing::warn!(error = %e, tenant = tenant.0, "relaystore redis: the due index was not lowered");
        }
    }

    /// Sweeps now, whether or not this handle holds the sweeper lease:
    /// every tenant with a record past its deadline has it removed, with
    /// what is attached to it, and announced as `Expired` (`Cascaded` for
    /// the attached). Returns how many tenants were swept. The sweeper
    /// loop calls this every `sweep_interval` on the handle holding the
    /// lease; tests and tools call it to settle expiry at once. On a
    /// cluster, room under a store-wide ceiling that a concurrent pass of
    /// another handle's sweeper freed comes back when that pass gives it
    /// back (its next call to the meta slot), not necessarily before this
    /// call returns.
    pub async fn sweep(&self) -> Result<usize> {
        let key = self.meta_key("due");
        let mut swept = 0;
        for _ in 0..ROUNDS {
            let taken: Vec<String> = self
                .inner
                .conn
                .call(
                    scripts::DUE_TAKE,
                    &key,
                    scripts::DueTakeArgs { most: TAKE.into() }.encode(),
                )
                .await?;
            for pair in taken.chunks(2) {
                let [tenant, score] = pair else {
                    return Err(Error::backend("malformed due index reply", true));
                };
                let id = tenant.parse::<u64>().map_err(|_| {
                    Error::backend(
                        format!("a malformed tenant in the due index: {tenant}"),
                        true,
                    )
                })?;
                let args = scripts::SweepArgs {
                    most: PER_TENANT.into(),
                }
                .encode();
                let next = match self
                    .run(
                        scripts::SWEEP,
                        TenantId(id),
                        Mode::Existing,
                        Issued::Nothing,
                        args,
                    )
                    .await?
                {
                    Some(reply) => {
                        reply.refusal()?;
                        scripts::SweepReply::decode(&reply)?.next
                    }
                    // No keys of this incarnation: nothing to sweep.
                    None => -1,
                };
                let _: i64 = self
                    .inner
                    .conn
                    .call(
                        scripts::DUE_SWEPT,
                        &key,
                        scripts::DueSweptArgs {
                            tenant: tenant.as_str().into(),
                            taken: score.as_str().into(),
                            next_due: next.to_string().into(),
                        }
                        .encode(),
                    )
                    .await?;
                swept += 1;
            }
            if taken.len() < 2 * TAKE {
                break;
            }
        }
        Ok(swept)
    }
}
