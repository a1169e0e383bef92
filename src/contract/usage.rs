//! What a tenant holds against its limits, for dashboards and for a relay
//! that wants to tell a client how close it is to a quota.

use crate::base::collection::{Collection, Kind, KINDS_MAX};

/// A tenant's use of one limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Usage {
    /// Units in use: records held plus creations in flight (for
    /// [`Collection::Streams`], [`Collection::Queues`] and
    /// [`Collection::Schedules`], those held).
    pub used: u64,
    /// The limit those units count against.
    pub limit: u64,
}

/// A tenant's usage per collection, from [`Store::usage`](crate::Store::usage). A snapshot of
/// counters that other threads keep moving; each figure is exact at some
/// instant during the call, not all at one.
#[derive(Clone, PartialEq, Eq)]
pub struct TenantUsage {
    pub(crate) per: [Option<Usage>; Collection::ALL.len()],
    /// Per declared kind, by its place: its tenant quota's use (`None`
    /// past the kinds declared).
    pub(crate) kinds: [Option<Usage>; KINDS_MAX],
}

impl TenantUsage {
    /// The tenant's use of its limit on `c`; `None` where no per-tenant
    /// count is kept: a quota switched off ([`TenantQuota::OFF`](crate::TenantQuota::OFF); only the
    /// store-wide ceiling bounds the tenant) and tombstones, which no
    /// tenant quota bounds.
    pub fn of(&self, c: Collection) -> Option<Usage> {
        self.per[c as usize]
    }

    /// The tenant's use of its quota on records of `kind`
    /// ([`RecordKind::per_tenant_max`](crate::RecordKind::per_tenant_max));
    /// `None` for a kind the store did not declare.
    pub fn of_kind(&self, kind: Kind) -> Option<Usage> {
        self.kinds[kind.index()]
    }
}

/// `used/limit`, as `3/100`.
impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.used, self.limit)
    }
}

impl TenantUsage {
    /// Every figure kept, by the name of its collection or kind.
    fn named(&self) -> impl Iterator<Item = (String, Usage)> + '_ {
        let collections = Collection::ALL
            .into_iter()
            .filter_map(|c| Some((c.name().to_string(), self.of(c)?)));
        let kinds = (0..KINDS_MAX)
            .filter_map(Kind::at)
            .filter_map(|k| Some((k.to_string(), self.of_kind(k)?)));
        collections.chain(kinds)
    }
}

/// Each figure kept, named: `leases: 3/100, presence: 12/1000, kind 0:
/// 4/64` (collections without a tenant count are left out).
impl std::fmt::Display for TenantUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, usage)) in self.named().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{name}: {usage}")?;
        }
        Ok(())
    }
}

/// As a map from each kept figure's name to it.
impl std::fmt::Debug for TenantUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.named()).finish()
    }
}
