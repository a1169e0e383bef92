//! Presence: a member's heartbeat record with a TTL.

use super::listing::{Cursor, Page};
use super::{owned_by, NameKey, Occupant, Owner, Store};
use crate::error::{Error, Result};
use crate::events::Cause;
use crate::ids::{LeaseId, TenantId};
use crate::quota::Reservation;
use crate::record::Stamp;
use crate::sync::{lock, Arc};
use crate::time::MonoTime;
use std::time::Duration;

pub(crate) struct Presence {
    pub(super) owner: Owner,
    /// The lease this presence is attached to, if any.
    pub(super) lease: Option<u64>,
    attrs: Arc<[u8]>,
    pub(super) attached: bool,
}

/// A visible presence record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresenceInfo {
    /// The member.
    pub member: Arc<str>,
    /// Its attributes.
    pub attrs: Arc<[u8]>,
    /// The lease it is attached to, if any.
    pub lease: Option<LeaseId>,
    /// Its version.
    pub version: u64,
    /// When it stops being live, on the store's monotonic clock.
    pub deadline: MonoTime,
}

impl Store {
    /// Records that `member` is alive for `ttl` (an absolute reset), creating
    /// the record if needed. `attrs`, if given, replace the stored ones.
    /// With `lease`, the record is attached to it and dies with it; a member
    /// already present under a different live lease is
    /// [`Error::Conflict`] (leave first).
    pub fn heartbeat(
        &self,
        tenant: TenantId,
        member: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
        lease: Option<LeaseId>,
    ) -> Result<Stamp> {
        let member = self.name(member)?;
        let attrs = attrs.map(|a| self.attrs(a)).transpose()?;
        let lease = lease.map(|l| self.lease_seq(l)).transpose()?;
        let now = self.clock.now();
        let deadline = self.deadline(now, ttl)?;
        if let Some(seq) = lease {
            self.lease_status(tenant, seq, now)?;
        }
        let key: NameKey = (tenant, member);
        // Refresh an existing record, else create one. A create that loses
        // a race with a concurrent create goes round once more.
        for _ in 0..2 {
            let refreshed = self.presence.update(&key, now, None, |v, stamp| {
                if !v.attached || !v.owner.valid() {
                    return Err(Error::NotFound);
                }
                if v.lease != lease {
                    return Err(Error::Conflict {
                        current_version: stamp.version,
                    });
                }
                if let Some(a) = &attrs {
                    v.attrs = Arc::clone(a);
                }
                Ok(((), Some(deadline)))
            });
            match refreshed {
                Ok((_, stamp)) => return Ok(stamp),
                Err(Error::NotFound | Error::Expired) => {}
                Err(Error::Conflict { current_version }) => match self.presence_occupant(&key, now)
                {
                    Occupant::Visible => return Err(Error::Conflict { current_version }),
                    Occupant::InFlight => return Err(Error::InFlight),
                    Occupant::Cleared => {}
                },
                Err(e) => return Err(e),
            }
            let attrs = attrs.clone().unwrap_or_else(|| Arc::from(&[][..]));
            match self.create_presence(&key, attrs, lease, now, deadline) {
                // Someone else created it meanwhile: refresh theirs, unless
                // their creation is still in flight.
                Err(Error::Conflict { .. }) => {
                    if let Occupant::InFlight = self.presence_occupant(&key, now) {
                        return Err(Error::InFlight);
                    }
                }
                other => return other,
            }
        }
        Err(Error::InFlight)
    }

    fn create_presence(
        &self,
        key: &NameKey,
        attrs: Arc<[u8]>,
        lease: Option<u64>,
        now: MonoTime,
        deadline: u64,
    ) -> Result<Stamp> {
        let t = self.tenant_or_create(key.0)?;
        self.admit_new(now)?;
        let reservation = Reservation::acquire(&[(&t.tenant.presence, 1)])?;
        let record = Presence {
            owner: Owner::of(&t),
            lease,
            attrs,
            attached: false,
        };
        let (stamp, replaced) = self.presence.insert(key.clone(), record, now, deadline)?;
        if let Some(old) = replaced {
            self.retire_presence(old, Cause::Expired, true);
        }
        if let Some(seq) = lease {
            let attached = self.attach_to_lease(
                key.0,
                seq,
                now,
                |l| &mut l.members,
                Arc::clone(&key.1),
                ("presence", self.config.presence_per_lease_max),
            );
            if let Err(e) = attached {
                let version = stamp.version;
                let _ = self.presence.remove_with(
                    key,
                    |v, s, _| owned_by(s.version == version && !v.attached),
                    now,
                );
                return Err(e);
            }
        }
        let version = stamp.version;
        {
            // Visible and indexed under one hold of the tenant's index, as
            // for listings.
            let mut index = lock(&t.tenant.index);
            self.presence
                .update(key, now, None, |v, s| {
                    owned_by(s.version == version)?;
                    v.attached = true;
                    Ok(((), None))
                })
                .map_err(|_| Error::Revoked)?;
            index.members.insert(Arc::clone(&key.1));
        }
        reservation.commit();
        Ok(stamp)
    }

    /// What holds `key`: a visible presence, a creation in flight, or an
    /// invisible record (tenant revoked, or its lease gone), which is
    /// removed so the member can come back.
    fn presence_occupant(&self, key: &NameKey, now: MonoTime) -> Occupant {
        let seen = self.presence.read(key, now, |v, s| {
            (v.attached, v.owner.valid(), v.lease, s.version)
        });
        let (owner_valid, lease, version) = match seen {
            Ok((true, owner_valid, lease, version)) => (owner_valid, lease, version),
            Ok((false, ..)) => return Occupant::InFlight,
            Err(_) => return Occupant::Cleared,
        };
        let lease_ok = lease.is_none_or(|seq| self.lease_status(key.0, seq, now).is_ok());
        if owner_valid && lease_ok {
            return Occupant::Visible;
        }
        if let Ok(removed) =
            self.presence
                .remove_with(key, |_, s, _| owned_by(s.version == version), now)
        {
            self.retire_presence(removed, Cause::Cascaded, true);
        }
        Occupant::Cleared
    }

    /// A visible presence record.
    pub fn get_presence(&self, tenant: TenantId, member: &str) -> Result<PresenceInfo> {
        let key = (tenant, self.name(member)?);
        self.presence_info(&key, self.clock.now())
    }

    fn presence_info(&self, key: &NameKey, now: MonoTime) -> Result<PresenceInfo> {
        let seen = self.presence.read(key, now, |v, stamp| {
            (v.attached && v.owner.valid()).then(|| PresenceInfo {
                member: Arc::clone(&key.1),
                attrs: Arc::clone(&v.attrs),
                lease: v.lease.map(|seq| self.lease_id(seq)),
                version: stamp.version,
                deadline: stamp.deadline,
            })
        });
        let info = match seen {
            Ok(Some(info)) => info,
            Ok(None) => return Err(Error::NotFound),
            Err(e) => return Err(e),
        };
        if let Some(lease) = info.lease {
            self.lease_status(key.0, lease.seq(), now)
                .map_err(|_| Error::NotFound)?;
        }
        Ok(info)
    }

    /// Up to `limit` visible presence records after `cursor`, in member
    /// order, with the same guarantees as [`Store::list_listings`].
    pub fn list_presence(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<PresenceInfo>> {
        self.page(
            tenant,
            cursor,
            limit,
            |index| &index.members,
            |store, key, now| store.presence_info(key, now).ok(),
        )
    }

    /// Removes a member's presence.
    pub fn leave(&self, tenant: TenantId, member: &str) -> Result<()> {
        let key = (tenant, self.name(member)?);
        let now = self.clock.now();
        self.presence_info(&key, now)?;
        let removed = self.presence.remove_with(
            &key,
            |v, _, _| owned_by(v.attached && v.owner.valid()),
            now,
        )?;
        self.retire_presence(removed, Cause::Released, true);
        Ok(())
    }
}
