//! What a tenant holds against its limits, for dashboards and for a relay
//! that wants to tell a client how close it is to a quota.

use super::{Collection, Store};
use crate::base::collection::Kind;
use crate::base::ids::TenantId;
use crate::contract::config::TenantQuota;
use crate::contract::usage::TenantUsage;
use crate::contract::usage::Usage;

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
        let declared = &self.shared.config.kinds;
        let kinds = std::array::from_fn(|i| {
            let kind = Kind::at(i)?;
            let limit = declared.get(i)?.per_tenant_max;
            let used = registered
                .as_ref()
                .and_then(|t| t.kind_quota(kind))
                .map_or(0, crate::mem::quota::Counter::used);
            Some(Usage { used, limit })
        });
        TenantUsage { per, kinds }
    }
}
