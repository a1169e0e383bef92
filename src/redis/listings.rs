//! Listings on Redis: publish, get, update, unpublish, revoke, pages.

use super::{quota_arg, scripts, Call, Issued, Mode, PageReply, RedisEngine};
use crate::base::attrs::Attrs;
use crate::base::error::{Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Name;
use crate::contract::relay::{Cursor, ListingInfo, Page};

impl RedisEngine {
    /// Publishes a listing under `key`, attached to `lease`, with `attrs`
    /// ([`Store::publish`](crate::Store::publish)): visible only while the
    /// lease is; a visible listing under `key` is `Conflict`; refused with
    /// `CapacityExceeded` at `listings_per_lease_max` or the tenant's
    /// listing quota.
    pub async fn publish(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        key: &str,
        attrs: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<ListingInfo> {
        let call = self.publish_call(tenant, lease, key, attrs, idempotency_key)?;
        let reply = self.answer_call(tenant, call).await?;
        let published = scripts::PublishReply::decode(&reply)?;
        Ok(ListingInfo {
            key: Name::new(key),
            lease,
            attrs: Attrs::new(attrs),
            version: published.version,
            remaining: published.remaining,
        })
    }

    /// [`publish`](Self::publish)'s call.
    pub(super) fn publish_call(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        key: &str,
        attrs: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<Call> {
        self.check_name(key)?;
        self.check_attrs(attrs)?;
        if let Some(k) = idempotency_key {
            self.check_name(k)?;
        }
        let config = self.config();
        let quota = self.quota(tenant);
        let args = scripts::PublishArgs {
            lease: lease.seq().into(),
            key: key.into(),
            attrs: attrs.into(),
            per_lease_max: config.listings_per_lease_max.into(),
            quota: quota_arg(quota.listings_max).into(),
            ikey: idempotency_key.unwrap_or("").into(),
            ikey_ttl: self.idempotency_ttl_ms().into(),
            ikey_quota: quota_arg(quota.idempotency_max).into(),
            per_holder_quota: quota_arg(quota.listings_per_holder_max).into(),
        }
        .encode();
        Ok(Call {
            function: scripts::PUBLISH,
            mode: Mode::Creating,
            issued: Issued::Id(lease.incarnation(), lease.seq()),
            args,
        })
    }

    /// A visible listing.
    pub async fn get_listing(&self, tenant: TenantId, key: &str) -> Result<ListingInfo> {
        self.check_name(key)?;
        let reply = self
            .answer(
                scripts::GET_LISTING,
                tenant,
                Mode::Existing,
                Issued::Nothing,
                scripts::GetListingArgs { key: key.into() }.encode(),
            )
            .await?;
        let r = scripts::GetListingReply::decode(&reply)?;
        Ok(ListingInfo {
            key: Name::new(key),
            lease: LeaseId::new(self.incarnation(), r.lease),
            attrs: r.attrs,
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// Replaces a listing's attributes if it is at `expected_version`;
    /// returns the new version (`Conflict` with the current one if not).
    pub async fn update_listing(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: u64,
        attrs: &[u8],
    ) -> Result<u64> {
        let call = self.update_listing_call(key, expected_version, attrs)?;
        let reply = self.answer_call(tenant, call).await?;
        Ok(scripts::UpdateListingReply::decode(&reply)?.version)
    }

    /// [`update_listing`](Self::update_listing)'s call.
    pub(super) fn update_listing_call(
        &self,
        key: &str,
        expected_version: u64,
        attrs: &[u8],
    ) -> Result<Call> {
        self.check_name(key)?;
        self.check_attrs(attrs)?;
        Ok(Call {
            function: scripts::UPDATE_LISTING,
            mode: Mode::Existing,
            issued: Issued::Nothing,
            args: scripts::UpdateListingArgs {
                key: key.into(),
                expected: expected_version.into(),
                attrs: attrs.into(),
            }
            .encode(),
        })
    }

    /// Removes a listing and its pending and bound join attempts (at
    /// `expected_version`, if given).
    pub async fn unpublish(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: Option<u64>,
    ) -> Result<()> {
        self.end_listing(tenant, key, expected_version, false).await
    }

    /// Revokes a listing and its join attempts; a listing that is not (or
    /// no longer) visible is `Ok`.
    pub async fn revoke_listing(&self, tenant: TenantId, key: &str) -> Result<()> {
        self.end_listing(tenant, key, None, true).await
    }

    async fn end_listing(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: Option<u64>,
        revoke: bool,
    ) -> Result<()> {
        let call = self.end_listing_call(key, expected_version, revoke)?;
        match self
            .run(call.function, tenant, call.mode, call.issued, call.args)
            .await?
        {
            Some(reply) => reply.refusal(),
            None if revoke => Ok(()),
            None => Err(Error::NotFound),
        }
    }

    /// [`unpublish`](Self::unpublish)'s call (`revoke` false) and
    /// [`revoke_listing`](Self::revoke_listing)'s (true).
    pub(super) fn end_listing_call(
        &self,
        key: &str,
        expected_version: Option<u64>,
        revoke: bool,
    ) -> Result<Call> {
        self.check_name(key)?;
        let expected = expected_version.map_or_else(String::new, |v| v.to_string());
        Ok(Call {
            function: scripts::UNPUBLISH,
            mode: Mode::Existing,
            issued: Issued::Nothing,
            args: scripts::UnpublishArgs {
                key: key.into(),
                expected: expected.into(),
                revoking: revoke.into(),
            }
            .encode(),
        })
    }

    /// One page of a tenant's visible listings in key order: `limit` keys
    /// are scanned after `cursor` (in `1..=page_len_max`), and the visible
    /// ones returned; `next` is set when there may be more.
    pub async fn list_listings(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<ListingInfo>> {
        let incarnation = self.incarnation();
        self.page(
            (scripts::LIST_LISTINGS, |after, limit| {
                scripts::ListListingsArgs { after, limit }.encode()
            }),
            tenant,
            cursor,
            limit,
            |r| {
                let page = scripts::ListListingsReply::decode(r)?;
                let items = page
                    .each
                    .into_iter()
                    .map(|l| ListingInfo {
                        key: Name::new(&l.key),
                        lease: LeaseId::new(incarnation, l.lease),
                        attrs: l.attrs,
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

    /// The attribute rule both engines apply.
    pub(super) fn check_attrs(&self, attrs: &[u8]) -> Result<()> {
        self.config().check_attrs(attrs)
    }
}
