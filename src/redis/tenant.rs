//! A whole tenant on Redis: revocation.

use super::{scripts, Issued, Mode, RedisEngine};
use crate::base::error::Result;
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
                args![tombstone.to_string()],
            )
            .await?
        {
            Some(reply) => reply.refusal(),
            None => Ok(()),
        }
    }
}
