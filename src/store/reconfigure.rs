//! Limits and quota policy changed while the store runs, without a restart
//! (a restart is a new incarnation: every client would get `Restarted`).
//!
//! A new configuration is published whole (`Snapshot`), and every
//! creation reads all the store-wide limits it checks from one snapshot
//! and its tenant's quotas from another, so an admission racing a
//! reconfiguration sees the old limits or the new ones, never a mix (loom
//! model `admission_vs_reconfigure`). Lowering a limit below what is held
//! evicts nothing: new work is refused until use falls under it.

use super::Store;
use crate::base::error::Result;
use crate::base::sync::Arc;
use crate::contract::config::{Limits, QuotaPolicy, StoreConfig, UniformQuota};
use crate::contract::events::Collection;

impl Store {
    /// Changes the store's limits at run time. What can change, every
    /// limit on how much the store holds:
    ///
    /// - every collection's store-wide ceiling (`leases_max`,
    ///   `listings_max`, `presence_max`, `attempts_max`, `replay_max`,
    ///   `idempotency_max`, `tombstones_max`, `locks_max`, `streams_max`,
    ///   `queues_max`, `schedules_max`) and `tenants_max`;
    /// - the uniform tenant quotas `tenant` (a changed `tenant` replaces
    ///   the quota policy with [`UniformQuota`], as
    ///   [`set_quota_policy`](Self::set_quota_policy) would), and the
    ///   per-tenant caps `streams_per_tenant_max`,
    ///   `queues_per_tenant_max`, `schedules_per_tenant_max` and
    ///   `channels_per_tenant_max`;
    /// - the store-wide budgets that streams and queues reserve at
    ///   creation (`stream_bytes_total_max`, `stream_entries_total_max`,
    ///   `queue_jobs_total_max`, `queue_bytes_total_max`);
    /// - `listeners_max`, `listeners_per_channel_max` and
    ///   `subscribers_max`.
    ///
    /// What stays fixed is the shape of a record or object (TTL bounds,
    /// per-lease caps, name, attribute, payload and page sizes, a stream's
    /// or queue's largest size, retention times, schedule intervals, the
    /// subscriber buffer, the fence floor). Every fixed field must equal
    /// the current one: otherwise `InvalidConfig` naming it, with rule
    /// "cannot change at run time"; a set that fails
    /// [`StoreConfig::validate`] is refused the same way, and a refusal
    /// changes nothing.
    ///
    /// Creations that start after this returns use the new limits;
    /// creations running meanwhile use the old ones or the new ones, whole.
    /// A limit lowered below its use evicts nothing.
    pub fn reconfigure(&self, config: StoreConfig) -> Result<()> {
        let _in = self.enter();
        config.validate()?;
        let _one = self
            .shared
            .reconfiguring
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let current = self.config();
        current.check_run_time_change(&config)?;
        let limits = Limits::of(&config);
        // The snapshot first: multi-limit admissions read it whole. Then
        // each counter's own limit, for single-limit admissions and for
        // reporting.
        self.shared.limits.store(limits.clone());
        let s = &self.shared;
        for (c, ceiling) in [
            (Collection::Leases, s.leases.ceiling()),
            (Collection::Listings, s.listings.ceiling()),
            (Collection::Presence, s.presence.ceiling()),
            (Collection::Attempts, &s.pending),
            (Collection::Replay, s.attempts.ceiling()),
            (Collection::Idempotency, s.idempotency.ceiling()),
            (Collection::Tombstones, s.tombstones.ceiling()),
            (Collection::Locks, s.locks.ceiling()),
        ] {
            ceiling.set_limit(limits.ceiling(c));
        }
        s.tenant_count.set_limit(limits.tenants_max);
        s.streams.relimit(&limits);
        s.queues.relimit(&limits);
        s.schedules.relimit(&limits);
        s.wakes.relimit(&limits);
        if config.tenant != current.tenant {
            self.replace_policy(Arc::new(UniformQuota(config.tenant.clone())));
        }
        s.config_now.store(config);
        tracing::info!("relaystore reconfigured");
        Ok(())
    }

    /// Replaces the quota policy. Tenants registered from now on get their
    /// quotas from `policy`; every registered tenant's quotas are replaced
    /// with `policy`'s, each tenant's whole. A quota lowered below its use
    /// evicts nothing; a quota that was off ([`TenantQuota::OFF`]) when a
    /// tenant registered stays off for it until it registers again (it
    /// holds nothing, and creates something), since nothing was counted.
    ///
    /// [`TenantQuota::OFF`]: crate::TenantQuota::OFF
    pub fn set_quota_policy(&self, policy: Arc<dyn QuotaPolicy>) {
        let _one = self
            .shared
            .reconfiguring
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.replace_policy(policy);
    }

    fn replace_policy(&self, policy: Arc<dyn QuotaPolicy>) {
        // Published before the registry is walked: a tenant registering
        // meanwhile either reads the new policy, or finds on its re-check
        // that it changed, or is in the registry by the walk.
        self.shared.policy.store(Arc::clone(&policy));
        let mut registered = Vec::new();
        self.shared.tenants.for_each(|id, epoch| {
            registered.push((*id, Arc::clone(&epoch.tenant)));
        });
        for (id, tenant) in registered {
            // The policy is the host's code: asked outside every lock.
            tenant.requota(policy.quota(id));
        }
    }

    /// The limits in force now: the configuration the store was built
    /// with, as changed by [`reconfigure`](Self::reconfigure).
    pub fn config(&self) -> StoreConfig {
        self.shared.config_now.read(StoreConfig::clone)
    }
}
