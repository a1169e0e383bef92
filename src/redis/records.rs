//! Records of the kinds a relay declared, on Redis (ADR 0080): put,
//! renew, get, list under a lease, remove. The library keeps them as
//! `lua/shared/65_declared.lua` describes; a kind is its letter there
//! (`codes.rs`).

use super::{codes, quota_arg, scripts, Issued, Mode, RedisEngine};
use crate::base::collection::Kind;
use crate::base::error::Result;
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Name;
use crate::contract::config::StoreConfig;
use crate::contract::kinds::RecordKind;
use crate::contract::relay::{RecordInfo, Renewal};
use crate::contract::rules::TtlRange;
use std::sync::Arc;
use std::time::Duration;

/// What every call on one record passes: the kind's letter and the
/// lease's sequence number, as the library names them.
struct On {
    kind: String,
    lease: String,
    issued: Issued,
}

impl RedisEngine {
    /// The kind this handle's configuration declared under `name`;
    /// [`Error::NotFound`](crate::Error::NotFound) if it declared none.
    pub fn kind(&self, name: &str) -> Result<Kind> {
        crate::contract::kinds::find(&self.config().kinds, name)
    }

    /// The configuration, checked to declare `kind` (refused if none is
    /// at its place: then `config.kinds[kind.index()]` is its
    /// declaration), and what a call on a record of it under `lease`
    /// passes. The configuration is shared, not copied.
    fn on(&self, kind: Kind, lease: LeaseId) -> Result<(Arc<StoreConfig>, On)> {
        let config = self.config();
        crate::contract::kinds::declared(&config.kinds, kind)?;
        let on = On {
            kind: char::from(codes::kind_letter(kind)).to_string(),
            lease: lease.seq().to_string(),
            issued: Issued::Id(lease.incarnation(), lease.seq()),
        };
        Ok((config, on))
    }

    /// `ttl` in whole milliseconds, inside the kind's range.
    fn kind_ttl_ms(declared: &RecordKind, ttl: Duration) -> Result<u64> {
        TtlRange::new(declared.ttl_min, declared.ttl_max)?
            .deadline(crate::base::time::MonoTime::ZERO, ttl)
    }

    /// Puts the record `name` of `kind` under `lease`, live for `ttl` (an
    /// absolute reset, within the kind's TTL range): creates it, or renews
    /// it and, with `attrs`, replaces its attributes
    /// ([`Store::put_record`](crate::Store::put_record)). A new record is
    /// refused with `CapacityExceeded` at its kind's cap per lease, quota
    /// per tenant or ceiling, and with `Draining` while the handle drains;
    /// a lease that is not live answers its state.
    pub async fn put_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
    ) -> Result<Renewal> {
        let (config, on) = self.on(kind, lease)?;
        let declared = &config.kinds[kind.index()];
        self.check_name(name)?;
        if let Some(a) = attrs {
            self.check_attrs(a)?;
        }
        let ttl = Self::kind_ttl_ms(declared, ttl)?;
        let args = scripts::PutRecordArgs {
            kind: on.kind.into(),
            lease: on.lease.into(),
            name: name.into(),
            ttl: ttl.into(),
            has_attrs: attrs.is_some().into(),
            attrs: attrs.unwrap_or_default().into(),
            per_lease_max: declared.per_lease_max.into(),
            quota: quota_arg(declared.per_tenant_max).into(),
            keep: self.keep_ms().into(),
            draining: self.refusing_new().into(),
        }
        .encode();
        let reply = self
            .answer(
                scripts::PUT_RECORD,
                tenant,
                Mode::Upserting,
                on.issued,
                args,
            )
            .await?;
        let r = scripts::PutRecordReply::decode(&reply)?;
        Ok(Renewal {
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// Renews the visible record `name` of `kind` under `lease` for `ttl`
    /// (within the kind's range), keeping its attributes;
    /// [`Error::NotFound`](crate::Error::NotFound) if there is none.
    pub async fn renew_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        ttl: Duration,
    ) -> Result<Renewal> {
        let (config, on) = self.on(kind, lease)?;
        let declared = &config.kinds[kind.index()];
        self.check_name(name)?;
        let ttl = Self::kind_ttl_ms(declared, ttl)?;
        let args = scripts::RenewRecordArgs {
            kind: on.kind.into(),
            lease: on.lease.into(),
            name: name.into(),
            ttl: ttl.into(),
            keep: self.keep_ms().into(),
        }
        .encode();
        let reply = self
            .answer(
                scripts::RENEW_RECORD,
                tenant,
                Mode::Existing,
                on.issued,
                args,
            )
            .await?;
        let r = scripts::RenewRecordReply::decode(&reply)?;
        Ok(Renewal {
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// The visible record `name` of `kind` under `lease`.
    pub async fn get_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
    ) -> Result<RecordInfo> {
        let (_, on) = self.on(kind, lease)?;
        self.check_name(name)?;
        let args = scripts::GetRecordArgs {
            kind: on.kind.into(),
            lease: on.lease.into(),
            name: name.into(),
        }
        .encode();
        let reply = self
            .answer(scripts::GET_RECORD, tenant, Mode::Existing, on.issued, args)
            .await?;
        let r = scripts::GetRecordReply::decode(&reply)?;
        Ok(RecordInfo {
            kind,
            lease,
            name: Name::new(name),
            attrs: r.attrs,
            version: r.version,
            remaining: r.remaining,
        })
    }

    /// The visible records of `kind` under `lease`, in the order they were
    /// made: at most the kind's `per_lease_max`, so in one answer. A lease
    /// that is not live has none ([`Error::NotFound`](crate::Error::NotFound)).
    pub async fn list_records(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
    ) -> Result<Vec<RecordInfo>> {
        let (_, on) = self.on(kind, lease)?;
        let args = scripts::ListRecordsArgs {
            kind: on.kind.into(),
            lease: on.lease.into(),
        }
        .encode();
        let reply = self
            .answer(
                scripts::LIST_RECORDS,
                tenant,
                Mode::Existing,
                on.issued,
                args,
            )
            .await?;
        Ok(scripts::ListRecordsReply::decode(&reply)?
            .each
            .into_iter()
            .map(|r| RecordInfo {
                kind,
                lease,
                name: Name::new(&r.name),
                attrs: r.attrs,
                version: r.version,
                remaining: r.remaining,
            })
            .collect())
    }

    /// Removes the visible record `name` of `kind` under `lease` (cause
    /// `Released`); [`Error::NotFound`](crate::Error::NotFound) if there
    /// is none.
    pub async fn remove_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
    ) -> Result<()> {
        let (_, on) = self.on(kind, lease)?;
        self.check_name(name)?;
        let args = scripts::RemoveRecordArgs {
            kind: on.kind.into(),
            lease: on.lease.into(),
            name: name.into(),
        }
        .encode();
        self.answer(
            scripts::REMOVE_RECORD,
            tenant,
            Mode::Existing,
            on.issued,
            args,
        )
        .await
        .map(drop)
    }
}
