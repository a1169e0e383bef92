//! A whole tenant on Redis: revocation, and forgetting a tenant that holds
//! nothing (ADR 0072).

use super::{scripts, Issued, Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::TenantId;

impl RedisEngine {
    /// Revokes everything a tenant holds, in one step
    /// ([`Store::revoke_tenant`](crate::Store::revoke_tenant)): the moment
    /// this returns, none of its leases, listings, presence records, join
    /// attempts, locks or idempotency records is visible on any instance,
    /// and its old leases read `Revoked` for `tombstone_ttl`. The call is
    /// O(1) on the server: the tenant's keys start a new epoch, and the old
    /// epoch's keys are deleted a few at a time by the sweeper and the
    /// tenant's later creations (ADR 0029), which announce what the
    /// revocation ended as they go (ADR 0071). Its own streams, queues and schedules stay,
    /// as in memory; streams attached to its leases go with them.
    /// Idempotent; an unknown tenant is fine.
    pub async fn revoke_tenant(&self, tenant: TenantId) -> Result<()> {
        let tombstone = crate::base::time::duration_to_millis_ceil(self.config().tombstone_ttl);
        match self
            .run(
                scripts::REVOKE_TENANT,
                tenant,
                Mode::Existing,
                Issued::Nothing,
                scripts::RevokeTenantArgs {
                    tombstone_ttl: tombstone.into(),
                }
                .encode(),
            )
            .await?
        {
            Some(reply) => reply.refusal(),
            None => Ok(()),
        }
    }

    /// Forgets every registered tenant that holds nothing now (no record
    /// in any collection, no ended epoch left to bury, no revocation whose
    /// leases still read `Revoked`): its own keys are deleted and it is
    /// taken off the store's register of tenants, which `tenants_max`
    /// bounds (ADR 0072). Returns how many were forgotten. The sweeper
    /// holder runs it every `FORGET_EVERY` sweeps (a minute at the default
    /// `sweep_interval`); it is safe at any time, on any handle. A
    /// registered tenant whose keys are missing (its slot lost them) stays
    /// registered, so its old ids go on answering `Restarted`.
    pub async fn forget_idle_tenants(&self) -> Result<usize> {
        let key = format!("{{{}}}:meta", self.inner.namespace);
        let mut forgotten = 0;
        let mut cursor = String::from("0");
        loop {
            let step: Vec<String> = self
                .inner
                .conn
                .call(
                    scripts::META_SCAN,
                    &key,
                    scripts::MetaScanArgs {
                        cursor: cursor.as_str().into(),
                        count: FORGET_SCAN.into(),
                    }
                    .encode(),
                )
                .await?;
            let Some((next, pairs)) = step.split_first() else {
                return Err(Error::backend("malformed register scan", true));
            };
            for pair in pairs.chunks(2) {
                let [tenant, generation] = pair else {
                    return Err(Error::backend("malformed register scan", true));
                };
                let id = tenant
                    .parse::<u64>()
                    .map_err(|_| Error::backend(format!("a malformed tenant: {tenant}"), true))?;
                let idle = match self
                    .run(
                        scripts::FORGET,
                        TenantId(id),
                        Mode::Existing,
                        Issued::Nothing,
                        args![],
                    )
                    .await?
                {
                    Some(reply) => {
                        reply.refusal()?;
                        scripts::ForgetReply::decode(&reply)?.idle == 1
                    }
                    // Its keys are missing: kept, for `Restarted`.
                    None => false,
                };
                if idle {
                    let taken: i64 = self
                        .inner
                        .conn
                        .call(
                            scripts::META_UNREGISTER,
                            &key,
                            scripts::MetaUnregisterArgs {
                                tenant: tenant.as_str().into(),
                                generation: generation.as_str().into(),
                            }
                            .encode(),
                        )
                        .await?;
                    forgotten += usize::try_from(taken).unwrap_or(0);
                }
            }
            cursor = next.clone();
            if cursor == "0" {
                return Ok(forgotten);
            }
        }
    }
}

/// Register entries one step of [`RedisEngine::forget_idle_tenants`] reads.
const FORGET_SCAN: usize = 256;

/// How many sweeps apart the sweeper holder forgets idle tenants (a minute
/// at the default `sweep_interval`).
pub(super) const FORGET_EVERY: u64 = 600;
