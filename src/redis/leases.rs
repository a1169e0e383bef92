//! Leases on Redis: grant, renew, renew at a version, get, revoke.

use super::reply::Reply;
use super::{quota_arg, scripts, Issued, Mode, PageReply, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Holder;
use crate::contract::relay::{Cursor, EndpointSeen, LeaseGrant, LeaseInfo, Page, Renewal};
use std::net::SocketAddr;
use std::time::{Duration, UNIX_EPOCH};

impl RedisEngine {
    /// Grants a lease to `holder` for `ttl`
    /// ([`Store::grant`](crate::Store::grant)): refused with
    /// `CapacityExceeded` at the tenant's lease quota. With an idempotency
    /// key, a repeat within `idempotency_ttl` returns the original grant,
    /// and a repeat with another holder or TTL is `IdempotencyMismatch`.
    /// The fence is above every earlier fence of the tenant and at least
    /// the server's clock in microseconds (ADR 0029).
    pub async fn grant(
        &self,
        tenant: TenantId,
        holder: &str,
        ttl: Duration,
        idempotency_key: Option<&str>,
    ) -> Result<LeaseGrant> {
        self.check_name(holder)?;
        if let Some(key) = idempotency_key {
            self.check_name(key)?;
        }
        let ttl_ms = self.ttl_ms(ttl)?;
        let quota = self.quota(tenant);
        let args = scripts::GrantArgs {
            holder: holder.into(),
            ttl_ms: ttl_ms.into(),
            quota: quota_arg(quota.leases_max).into(),
            keep_ms: self.keep_ms().into(),
            ikey: idempotency_key.unwrap_or("").into(),
            ikey_ttl: self.idempotency_ttl_ms().into(),
            ikey_quota: quota_arg(quota.idempotency_max).into(),
            per_holder_quota: quota_arg(quota.leases_per_holder_max).into(),
        }
        .encode();
        let reply = self
            .answer(
                scripts::GRANT,
                tenant,
                Mode::Creating,
                Issued::Nothing,
                args,
            )
            .await?;
        let r = scripts::GrantReply::decode(&reply)?;
        Ok(LeaseGrant {
            id: LeaseId::new(self.incarnation(), r.seq),
            fence: r.seq,
            version: r.version,
            remaining: Duration::from_millis(r.deadline.saturating_sub(r.now)),
            expires_at: UNIX_EPOCH + Duration::from_millis(r.deadline),
        })
    }

    /// Resets a lease's deadline to now + `ttl`
    /// ([`Store::renew`](crate::Store::renew)).
    pub async fn renew(&self, tenant: TenantId, id: LeaseId, ttl: Duration) -> Result<Renewal> {
        self.renew_lease(tenant, id, ttl, None).await
    }

    /// [`renew`](Self::renew), only if the lease is still at `version`
    /// (else `Conflict` with the current version).
    pub async fn renew_at(
        &self,
        tenant: TenantId,
        id: LeaseId,
        ttl: Duration,
        version: u64,
    ) -> Result<Renewal> {
        self.renew_lease(tenant, id, ttl, Some(version)).await
    }

    async fn renew_lease(
        &self,
        tenant: TenantId,
        id: LeaseId,
        ttl: Duration,
        version: Option<u64>,
    ) -> Result<Renewal> {
        let ttl_ms = self.ttl_ms(ttl)?;
        let args = scripts::RenewArgs {
            seq: id.seq().into(),
            ttl_ms: ttl_ms.into(),
            expected: version.map_or_else(String::new, |v| v.to_string()).into(),
            keep_ms: self.keep_ms().into(),
        }
        .encode();
        let reply = self.existing(scripts::RENEW, tenant, id, args).await?;
        let r = scripts::RenewReply::decode(&reply)?;
        Ok(Renewal {
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// A live lease ([`Store::get_lease`](crate::Store::get_lease)).
    pub async fn get_lease(&self, tenant: TenantId, id: LeaseId) -> Result<LeaseInfo> {
        let args = scripts::GetLeaseArgs {
            seq: id.seq().into(),
        }
        .encode();
        let reply = self.existing(scripts::GET_LEASE, tenant, id, args).await?;
        let r = scripts::GetLeaseReply::decode(&reply)?;
        Ok(LeaseInfo {
            id,
            holder: Holder::from(&*r.holder),
            fence: id.seq(),
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// One page of a tenant's visible leases in id order
    /// ([`Store::list_leases`](crate::Store::list_leases)): `limit` leases
    /// (in `1..=page_len_max`) are scanned after `cursor`, and the visible
    /// ones returned; `next` is set when there may be more. Leases granted
    /// by a library without this index (before it existed) are not listed.
    pub async fn list_leases(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<LeaseInfo>> {
        let incarnation = self.incarnation();
        self.page(
            (scripts::LIST_LEASES, |after, limit| {
                scripts::ListLeasesArgs { after, limit }.encode()
            }),
            tenant,
            cursor,
            limit,
            |r| {
                let page = scripts::ListLeasesReply::decode(r)?;
                let items = page
                    .each
                    .into_iter()
                    .map(|l| LeaseInfo {
                        id: LeaseId::new(incarnation, l.seq),
                        holder: Holder::from(&*l.holder),
                        fence: l.seq,
                        version: l.version,
                        remaining: l.remaining,
                    })
                    .collect();
                Ok(PageReply {
                    more: page.more,
                    last: page.last,
                    items,
                })
            },
        )
        .await
    }

    /// Revokes a lease and, in the same call, every lock attached to it
    /// ([`Store::revoke`](crate::Store::revoke)). Idempotent while the
    /// lease's tombstone lives (`tombstone_ttl`).
    pub async fn revoke(&self, tenant: TenantId, id: LeaseId) -> Result<()> {
        let tombstone = crate::base::time::duration_to_millis_ceil(self.config().tombstone_ttl);
        let args = scripts::RevokeArgs {
            seq: id.seq().into(),
            tombstone_ms: tombstone.into(),
        }
        .encode();
        self.existing(scripts::REVOKE, tenant, id, args)
            .await
            .map(drop)
    }

    /// Records that `addr` was observed for the lease's holder now
    /// ([`Store::observe_endpoint`](crate::Store::observe_endpoint)): at
    /// most `endpoints_per_lease_max` are kept, and past that the least
    /// recently seen one is replaced.
    pub async fn observe_endpoint(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        addr: SocketAddr,
    ) -> Result<()> {
        let cap = self.config().endpoints_per_lease_max;
        let args = scripts::ObserveArgs {
            seq: lease.seq().into(),
            address: addr.to_string().into(),
            per_lease_max: cap.into(),
        }
        .encode();
        self.existing(scripts::OBSERVE, tenant, lease, args)
            .await
            .map(drop)
    }

    /// The endpoints observed for a live lease, most recently seen first.
    pub async fn endpoints(&self, tenant: TenantId, lease: LeaseId) -> Result<Vec<EndpointSeen>> {
        let args = scripts::EndpointsArgs {
            seq: lease.seq().into(),
        }
        .encode();
        let reply = self
            .existing(scripts::ENDPOINTS, tenant, lease, args)
            .await?;
        scripts::EndpointsReply::decode(&reply)?
            .each
            .into_iter()
            .map(|e| {
                let addr = e
                    .address
                    .parse()
                    .map_err(|_| Error::backend("malformed endpoint", true))?;
                Ok(EndpointSeen { addr, age: e.age })
            })
            .collect()
    }

    /// Runs a function on an existing lease: `NotFound` when the tenant has
    /// nothing in this incarnation, the refusal the function names, or its
    /// reply.
    async fn existing(
        &self,
        function: scripts::Function,
        tenant: TenantId,
        id: LeaseId,
        args: Vec<Vec<u8>>,
    ) -> Result<Reply> {
        let issued = Issued::Id(id.incarnation(), id.seq());
        self.answer(function, tenant, Mode::Existing, issued, args)
            .await
    }
}
