//! Presence on Redis: heartbeat, get, pages, leave.

use super::{quota_arg, scripts, Issued, Mode, PageReply, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Name;
use crate::contract::relay::{Cursor, Page, PresenceInfo, Renewal};
use std::time::Duration;

impl RedisEngine {
    /// Records that `member` is alive for `ttl` (an absolute reset),
    /// creating the record if needed ([`Store::heartbeat`](crate::Store::heartbeat)).
    /// `attrs`, if given, replace the stored ones. With `lease`, the record
    /// dies with the lease; a member present under another live lease is
    /// `Conflict`. Refused with `CapacityExceeded` at
    /// `presence_per_lease_max` or the tenant's presence quota, and a new
    /// record with `Draining` while the handle drains.
    pub async fn heartbeat(
        &self,
        tenant: TenantId,
        member: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
        lease: Option<LeaseId>,
    ) -> Result<Renewal> {
        self.check_name(member)?;
        if let Some(a) = attrs {
            self.check_attrs(a)?;
        }
        let ttl_ms = self.ttl_ms(ttl)?;
        let config = self.config();
        let quota = self.quota(tenant);
        let args = scripts::HeartbeatArgs {
            member: member.into(),
            ttl: ttl_ms.into(),
            has_attrs: attrs.is_some().into(),
            attrs: attrs.unwrap_or_default().into(),
            lease: lease
                .map_or_else(String::new, |l| l.seq().to_string())
                .into(),
            per_lease_max: config.presence_per_lease_max.into(),
            quota: quota_arg(quota.presence_max).into(),
            keep: self.keep_ms().into(),
            draining: self.refusing_new().into(),
        }
        .encode();
        let issued = lease.map_or(Issued::Nothing, |l| Issued::Id(l.incarnation(), l.seq()));
        let reply = self
            .answer(scripts::HEARTBEAT, tenant, Mode::Upserting, issued, args)
            .await?;
        let r = scripts::HeartbeatReply::decode(&reply)?;
        Ok(Renewal {
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// A visible presence record.
    pub async fn get_presence(&self, tenant: TenantId, member: &str) -> Result<PresenceInfo> {
        self.check_name(member)?;
        let reply = self
            .answer(
                scripts::GET_PRESENCE,
                tenant,
                Mode::Existing,
                Issued::Nothing,
                scripts::GetPresenceArgs {
                    member: member.into(),
                }
                .encode(),
            )
            .await?;
        let r = scripts::GetPresenceReply::decode(&reply)?;
        Ok(PresenceInfo {
            member: Name::new(member),
            attrs: r.attrs,
            lease: self.lease_of(&r.lease)?,
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// One page of a tenant's visible presence records in member order,
    /// with the same rules as [`list_listings`](Self::list_listings).
    pub async fn list_presence(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<PresenceInfo>> {
        self.page(
            (scripts::LIST_PRESENCE, |after, limit| {
                scripts::ListPresenceArgs { after, limit }.encode()
            }),
            tenant,
            cursor,
            limit,
            |r| {
                let page = scripts::ListPresenceReply::decode(r)?;
                let items = page
                    .each
                    .into_iter()
                    .map(|m| {
                        Ok(PresenceInfo {
                            member: Name::new(&m.member),
                            attrs: m.attrs,
                            lease: self.lease_of(&m.lease)?,
                            version: m.version,
                            remaining: m.remaining,
                        })
                    })
                    .collect::<Result<_>>()?;
                Ok(PageReply {
                    more: page.more,
                    last: page.last,
                    items,
                })
            },
        )
        .await
    }

    /// Removes a visible presence record.
    pub async fn leave(&self, tenant: TenantId, member: &str) -> Result<()> {
        self.check_name(member)?;
        self.answer(
            scripts::LEAVE,
            tenant,
            Mode::Existing,
            Issued::Nothing,
            scripts::LeaveArgs {
                member: member.into(),
            }
            .encode(),
        )
        .await
        .map(drop)
    }

    /// The lease of a presence record as the library writes it: its
    /// sequence number, or '' for none.
    fn lease_of(&self, seq: &str) -> Result<Option<LeaseId>> {
        if seq.is_empty() {
            return Ok(None);
        }
        let seq = seq
            .parse()
            .map_err(|_| Error::backend("malformed lease of a presence record", true))?;
        Ok(Some(LeaseId::new(self.incarnation(), seq)))
    }
}
