//! What a tenant holds against its limits, for dashboards and for a relay
//! that wants to tell a client how close it is to a quota.

use super::{Collection, Store};
use crate::base::ids::TenantId;
use crate::contract::config::TenantQuota;

/// A tenant's use of one limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Usage {
    /// Units in use: records held plus creations in flight (for
    /// [`Collection::Streams`], [`Collection::Queues`] and
    /// [`Collection::Schedules`], those held).
    pub used: u64,
    /// The limit those units count against.
    pub limit: u64,
}

/// A tenant's usage per collection, from [`Store::usage`]. A snapshot of
/// counters that other threads keep moving; each figure is exact at some
/// instant during the call, not all at one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantUsage {
    per: [Option<Usage>; Collection::ALL.len()],
}

impl TenantUsage {
    /// The tenant's use of its limit on `c`; `None` where no per-tenant
    /// count is kept: a quota switched off ([`TenantQuota::OFF`]; only the
    /// store-wide ceiling bounds the tenant) and tombstones, which no
    /// tenant quota bounds.
    pub fn of(&self, c: Collection) -> Option<Usage> {
        self.per[c as usize]
    }
}

impl Store {
    /// Tenant `tenant`'s usage against each of its limits. A tenant that
    /// holds nothing (or was never seen) uses nothing, against the quotas
    /// the policy would give it now.
    pub fn usage(&self, tenant: TenantId) -> TenantUsage {
        let registered = self
            .shared
            .tenants
            .read(&tenant, |epoch| std::sync::Arc::clone(&epoch.tenant));
        let quota = match &registered {
            Some(_) => None,
            // The policy is the host's code: asked outside every lock.
            None => Some(self.shared.policy.read(std::sync::Arc::clone).quota(tenant)),
        };
        let per = Collection::ALL.map(|c| match c {
            Collection::Streams => {
                let (used, limit) = self.shared.streams.tenant_usage(tenant);
                Some(Usage { used, limit })
            }
            Collection::Queues => {
                let (used, limit) = self.shared.queues.tenant_usage(tenant);
                Some(Usage { used, limit })
            }
            Collection::Schedules => {
                let (used, limit) = self.shared.schedules.tenant_usage(tenant);
                Some(Usage { used, limit })
            }
            _ => match (&registered, &quota) {
                (Some(t), _) => {
                    let counter = t.quota(c);
                    counter.is_counted().then(|| Usage {
                        used: counter.used(),
                        limit: t.limit(c),
                    })
                }
                (None, Some(q)) => {
                    let limit = q.limit(c);
                    (limit != TenantQuota::OFF).then_some(Usage { used: 0, limit })
                }
                (None, None) => None,
            },
        });
        TenantUsage { per }
    }
}
