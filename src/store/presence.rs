//! Presence: a member's heartbeat record with a TTL.

use super::attach::{Child, LeaseChild, Occupant, Parent};
use super::retire::Why;
use crate::base::sync::{lock_at, Arc, Rung};
use crate::contract::events::RecordId;
use crate::contract::relay::PresenceInfo;

use super::retire::Stored;
use super::tenant::{Owner, TenantIndex};
use super::visible::Ancestry;
use super::{owned_by, Collection, NameKey, NameLookup, Renewal, Store};
use crate::base::attrs::Attrs;
use crate::base::error::{Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Name;
use crate::base::time::MonoTime;
use crate::contract::events::Cause;
use crate::contract::relay::Cursor;
use crate::contract::relay::Page;
use crate::mem::record::Stamp;
use crate::mem::table::{Removed, Table};
use std::time::Duration;

pub(crate) struct Presence {
    pub(super) owner: Owner,
    /// The lease this presence is attached to, if any.
    pub(super) lease: Option<u64>,
    attrs: Attrs,
    pub(super) attached: bool,
}

impl Stored for Presence {
    type Key = NameKey;
    type Storage = crate::mem::shard::ShardMap<NameKey, crate::mem::record::Record<Self>>;

    fn table(store: &Store) -> &Table<NameKey, Presence> {
        &store.shared.presence
    }

    fn retire(
        store: &Store,
        removed: Removed<NameKey, Self>,
        cause: Cause,
        _now: MonoTime,
    ) -> usize {
        store.retire_presence(removed, cause, true);
        0
    }
}

impl Child for Presence {
    const QUOTAS: &'static [Collection] = &[Collection::Presence];

    fn attached(&self) -> bool {
        self.attached
    }

    fn set_attached(&mut self) {
        self.attached = true;
    }

    fn ancestry(&self) -> Ancestry {
        Ancestry {
            owner_valid: self.owner.valid(),
            lease: self.lease,
            listing: None,
        }
    }

    const INDEX: Option<fn(&NameKey, &mut TenantIndex)> = Some(|key, index| {
        index.members.insert(key.1.clone());
    });
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
    ) -> Result<Renewal> {
        self.check_name(member)?;
        let attrs = attrs.map(|a| self.attrs(a)).transpose()?;
        let lease = lease.map(|l| self.lease_seq(l)).transpose()?;
        self.refuse_if_stopped()?;
        let now = self.shared.clock.now();
        let deadline = self.deadline(now, ttl)?;
        if let Some(seq) = lease {
            self.lease_status(tenant, seq, now)?;
        }
        let name: &dyn NameLookup = &(tenant, member);
        // The owned key, built only if the record is not simply refreshed.
        let mut owned: Option<NameKey> = None;
        let own = || (tenant, Name::new(member));
        // Refresh an existing record, else create one. A create that loses
        // a race with a concurrent create goes round once more.
        for _ in 0..2 {
            let refreshed = self.refresh_presence(name, now, deadline, lease, attrs.as_ref());
            let key = match refreshed {
                Ok(stamp) => return Ok(Renewal::of(stamp, now)),
                Err(Error::NotFound | Error::Expired) => owned.get_or_insert_with(own),
                // Under another lease: taken, unless that lease is gone.
                Err(Error::Conflict { current_version }) => {
                    let key = owned.get_or_insert_with(own);
                    match self.occupant::<Presence>(tenant, key, now) {
                        Occupant::Visible => return Err(Error::Conflict { current_version }),
                        Occupant::InFlight => return Err(Error::InFlight),
                        Occupant::Cleared => key,
                    }
                }
                Err(e) => return Err(e),
            };
            let parent = match lease {
                Some(seq) => Parent::Lease {
                    seq,
                    kind: LeaseChild::Members,
                    child: key.1.clone(),
                },
                None => Parent::None,
            };
            let attrs = attrs.clone().unwrap_or_default();
            let created = self.create(tenant, key.clone(), parent, now, deadline, |owner, _| {
                Presence {
                    owner,
                    lease,
                    attrs: attrs.clone(),
                    attached: false,
                }
            });
            match created {
                // Someone else created it meanwhile: refresh theirs.
                Err(Error::Conflict { .. }) => {}
                other => return other.map(|stamp| Renewal::of(stamp, now)),
            }
        }
        Err(Error::InFlight)
    }

    /// Moves an existing, attached record's deadline to `deadline`, if it
    /// is under `lease` (else [`Error::Conflict`]); with `attrs`, replaces
    /// its attributes too. Without attributes (the common heartbeat) only
    /// the record's state word changes: a shared shard lock and a CAS, as
    /// for a lease renewal, so a heartbeat holds no write lock against the
    /// other heartbeats, reads and renewals of its shard (ADR 0037).
    fn refresh_presence(
        &self,
        key: &dyn NameLookup,
        now: MonoTime,
        deadline: u64,
        lease: Option<u64>,
        attrs: Option<&Attrs>,
    ) -> Result<Stamp> {
        let check = |v: &Presence, version: &dyn Fn() -> u64| {
            if !v.attached || !v.owner.valid() {
                Err(Error::NotFound)
            } else if v.lease != lease {
                Err(Error::Conflict {
                    current_version: version(),
                })
            } else {
                Ok(())
            }
        };
        let table = &self.shared.presence;
        match attrs {
            None => table.renew_guarded(key, now, deadline, None, |head, v| {
                check(v, &|| head.stamp().version)
            }),
            Some(attrs) => table
                .update(key, now, None, |v, stamp| {
                    check(v, &|| stamp.version)?;
                    v.attrs = attrs.clone();
                    Ok(((), Some(deadline)))
                })
                .map(|((), stamp)| stamp),
        }
    }

    /// A visible presence record.
    pub fn get_presence(&self, tenant: TenantId, member: &str) -> Result<PresenceInfo> {
        let key = (tenant, self.key_name(member)?);
        self.presence_info(&key, self.shared.clock.now())
    }

    /// Reads a visible presence record in place: `read` gets its
    /// attributes under the shard's shared lock, and nothing is copied or
    /// allocated, the member's name included. The same visibility as
    /// [`get_presence`](Self::get_presence) (live, and its lease visible
    /// if it has one), for a relay's packet path; keep `read` short.
    pub fn read_presence<R>(
        &self,
        tenant: TenantId,
        member: &str,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        self.check_name(member)?;
        let name: &dyn NameLookup = &(tenant, member);
        let now = self.shared.clock.now();
        let seen = self.shared.presence.read(name, now, |v, _| {
            (v.attached && v.owner.valid()).then(|| (v.lease, read(&v.attrs)))
        });
        let (lease, seen) = match seen {
            Ok(Some(seen)) => seen,
            Ok(None) => return Err(Error::NotFound),
            Err(e) => return Err(e),
        };
        if let Some(lease) = lease {
            self.lease_status(tenant, lease, now)
                .map_err(|_| Error::NotFound)?;
        }
        Ok(seen)
    }

    fn presence_info(&self, key: &NameKey, now: MonoTime) -> Result<PresenceInfo> {
        let seen = self.shared.presence.read(key, now, |v, stamp| {
            (v.attached && v.owner.valid()).then(|| PresenceInfo {
                member: key.1.clone(),
                attrs: v.attrs.clone(),
                lease: v.lease.map(|seq| self.lease_id(seq)),
                version: stamp.version,
                remaining: stamp.remaining(now),
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
        let key = (tenant, self.key_name(member)?);
        let now = self.shared.clock.now();
        self.presence_info(&key, now)?;
        let removed = self.shared.presence.remove_with(
            &key,
            |v, _, _| owned_by(v.attached && v.owner.valid()),
            now,
        )?;
        self.retire_presence(removed, Cause::Released, true);
        Ok(())
    }
}

impl Store {
    pub(super) fn retire_presence(
        &self,
        r: Removed<NameKey, Presence>,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        let (tenant, member) = r.key;
        let presence = r.value;
        if let (true, Some(lease)) = (detach, presence.lease) {
            self.detach_from_lease(lease, LeaseChild::Members, &member);
        }
        if presence.attached {
            presence
                .owner
                .tenant()
                .quota(Collection::Presence)
                .release(1);
            lock_at(Rung::TenantIndex, &presence.owner.tenant().index)
                .members
                .remove(&member);
            self.announce(
                Collection::Presence,
                tenant,
                || RecordId::Member(Arc::from(member)),
                &why,
                || None,
            );
            self.release_owner(&presence.owner);
        }
    }
}
