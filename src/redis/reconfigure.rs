//! Limits and quota policy changed while a Redis engine handle runs, as
//! the in-memory store changes its own (`Store::reconfigure`): the same
//! run-time fields, the same refusal of the others.
//!
//! Every per-tenant call passes its handle's limits and the tenant's
//! quotas as arguments, so a change takes effect at the handle's next
//! call, whole (each call reads one configuration and one policy). The
//! store-wide ceilings count every handle's records but each call checks
//! them against its own handle's limits: reconfigure every instance of a
//! namespace alike, as they were connected alike (ADR 0031).

use super::RedisEngine;
use crate::base::error::Result;
use crate::contract::config::{Limits, QuotaPolicy, StoreConfig, UniformQuota};
use std::sync::Arc;

impl RedisEngine {
    /// Changes this handle's limits at run time: the fields
    /// [`Store::reconfigure`](crate::Store::reconfigure) changes (store-wide
    /// ceilings and budgets, tenant quotas and per-tenant caps, listener
    /// and subscriber bounds), refusing a change of any other with
    /// `InvalidConfig` ("cannot change at run time") and changing nothing
    /// then. A changed `tenant` replaces the quota policy with
    /// [`UniformQuota`]. A limit lowered below its use evicts nothing: new
    /// work is refused until use falls under it. A store-wide ceiling
    /// switched on at run time counts the records created from then on.
    pub async fn reconfigure(&self, config: StoreConfig) -> Result<()> {
        config.validate()?;
        let _one = self
            .inner
            .reconfiguring
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let current = self.config();
        current.check_run_time_change(&config)?;
        let limits = Limits::of(&config);
        self.inner.limits.store(limits.clone());
        self.inner.wakes.relimit(&limits);
        self.inner.ceilings.relimit(&config);
        if config.tenant != current.tenant {
            let policy: Arc<dyn QuotaPolicy> = Arc::new(UniformQuota(config.tenant.clone()));
            self.inner.policy.store(Arc::new(policy));
        }
        self.inner.config.store(Arc::new(config));
        tracing::info!("relaystore redis handle reconfigured");
        Ok(())
    }

    /// Replaces this handle's quota policy: every call from now on takes
    /// its tenant's quotas from `policy` (asked on every call that checks
    /// one, outside every lock: keep it a lookup). A quota lowered below
    /// its use evicts nothing.
    pub async fn set_quota_policy(&self, policy: Arc<dyn QuotaPolicy>) {
        self.inner.policy.store(Arc::new(policy));
    }
}
