//! Named locks on Redis: take, get, renew, release; attached to a lease.

use super::{quota_arg, reply, scripts, Issued, Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Holder;
use crate::contract::relay::{LockInfo, Renewal};
use std::time::Duration;

impl RedisEngine {
    /// Takes the lock `name` for `owner` for `ttl`, or `Ok(None)` if another
    /// live owner holds it ([`Store::try_lock`](crate::Store::try_lock)).
    /// With `lease`, the lock goes when the lease does. The fence is above
    /// every earlier fence of the tenant, so a later holder's is higher.
    pub async fn try_lock(
        &self,
        tenant: TenantId,
        name: &str,
        owner: &str,
        ttl: Duration,
        lease: Option<LeaseId>,
    ) -> Result<Option<LockInfo>> {
        self.config().check_own_name(name)?;
        self.take_lock(tenant, name, owner, ttl, lease).await
    }

    /// [`try_lock`](Self::try_lock) for a name already checked (the
    /// store's own locks have reserved names).
    pub(super) async fn take_lock(
        &self,
        tenant: TenantId,
        name: &str,
        owner: &str,
        ttl: Duration,
        lease: Option<LeaseId>,
    ) -> Result<Option<LockInfo>> {
        self.check_name(owner)?;
        let ttl_ms = self.ttl_ms(ttl)?;
        let config = self.config();
        let quota = self.quota(tenant);
        let args = scripts::TryLockArgs {
            name: name.into(),
            owner: owner.into(),
            ttl: ttl_ms.into(),
            lease: lease
                .map_or_else(String::new, |l| l.seq().to_string())
                .into(),
            quota: quota_arg(quota.locks_max).into(),
            per_lease_max: config.locks_per_lease_max.into(),
            keep: self.keep_ms().into(),
        }
        .encode();
        let issued = lease.map_or(Issued::Nothing, |l| Issued::Id(l.incarnation(), l.seq()));
        let Some(reply) = self
            .run(scripts::TRY_LOCK, tenant, Mode::Creating, issued, args)
            .await?
        else {
            return Err(Error::NotFound);
        };
        if reply.code()? == reply::HELD {
            return Ok(None);
        }
        reply.refusal()?;
        let r = scripts::TryLockReply::decode(&reply)?;
        Ok(Some(LockInfo {
            holder: owner.into(),
            fence: r.fence,
            version: r.version,
            remaining: r.remaining,
        }))
    }

    /// The lock `name`, if a live owner holds it (and its lease, if it has
    /// one, is live).
    pub async fn get_lock(&self, tenant: TenantId, name: &str) -> Result<LockInfo> {
        self.check_name(name)?;
        let reply = self
            .answer(
                scripts::GET_LOCK,
                tenant,
                Mode::Existing,
                Issued::Nothing,
                scripts::GetLockArgs { name: name.into() }.encode(),
            )
            .await?;
        let r = scripts::GetLockReply::decode(&reply)?;
        Ok(LockInfo {
            holder: Holder::from(&*r.holder),
            fence: r.fence,
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// Renews the lock `name` held with `fence`: `Expired` once it has
    /// lapsed (also if another owner took it since), `NotFound` after a
    /// release, `Restarted` for a fence from an earlier incarnation.
    pub async fn renew_lock(
        &self,
        tenant: TenantId,
        name: &str,
        fence: u64,
        ttl: Duration,
    ) -> Result<Renewal> {
        self.check_name(name)?;
        let ttl_ms = self.ttl_ms(ttl)?;
        let args = scripts::RenewLockArgs {
            name: name.into(),
            fence: fence.into(),
            ttl: ttl_ms.into(),
            keep: self.keep_ms().into(),
        }
        .encode();
        let reply = self
            .answer(
                scripts::RENEW_LOCK,
                tenant,
                Mode::Existing,
                Issued::Fence(fence),
                args,
            )
            .await?;
        let r = scripts::RenewLockReply::decode(&reply)?;
        Ok(Renewal {
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// Releases the lock `name` if it is still held with `fence`.
    /// Idempotent, and never releases a later holder's lock.
    pub async fn release_lock(&self, tenant: TenantId, name: &str, fence: u64) -> Result<()> {
        self.check_name(name)?;
        let args = scripts::ReleaseLockArgs {
            name: name.into(),
            fence: fence.into(),
        }
        .encode();
        match self
            .run(
                scripts::RELEASE_LOCK,
                tenant,
                Mode::Existing,
                Issued::Fence(fence),
                args,
            )
            .await?
        {
            Some(reply) => reply.refusal(),
            None => Ok(()),
        }
    }
}
