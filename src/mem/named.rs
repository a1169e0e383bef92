//! What the named, per-tenant mechanisms (streams, queues, schedules) share:
//! a key of tenant and name that is looked up by a borrowed `(tenant, &str)`
//! without allocating, and a per-tenant count against a cap.

use crate::base::error::{Error, Result, Scope};
use crate::base::ids::TenantId;
use crate::base::sync::Arc;
use crate::mem::quota::{Counter, Reservation};
use crate::mem::shard::{ShardMap, Upsert};

/// A key of one tenant's named object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TenantName(pub(crate) TenantId, pub(crate) Arc<str>);

/// A key as a caller holds it: looked up without building an owned key
/// (no allocation per append, claim or read).
pub(crate) type NameRef<'a> = (TenantId, &'a str);

/// A key seen through its parts: an owned [`TenantName`] and a borrowed
/// [`NameRef`] hash and compare alike, so a map finds one by the other.
pub(crate) trait KeyView {
    fn parts(&self) -> (TenantId, &str);
}

impl KeyView for TenantName {
    fn parts(&self) -> (TenantId, &str) {
        (self.0, &self.1)
    }
}

impl KeyView for NameRef<'_> {
    fn parts(&self) -> (TenantId, &str) {
        *self
    }
}

impl std::hash::Hash for dyn KeyView + '_ {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyView + '_ {}

// By hand, to hash exactly as the view does (`Borrow` requires it).
impl std::hash::Hash for TenantName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl<'a> std::borrow::Borrow<dyn KeyView + 'a> for TenantName {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

/// The map's lookup form of a borrowed key.
pub(crate) fn view<'k>(key: &'k NameRef<'_>) -> &'k (dyn KeyView + 'k) {
    key
}

/// How many objects of one kind each tenant holds, against a cap the
/// caller reads (from the store's run-time limits); a tenant holding none
/// has no entry.
pub(crate) struct TenantCounts {
    counts: ShardMap<TenantId, u64>,
    scope: Scope,
}

impl TenantCounts {
    pub(crate) fn new(scope: Scope) -> Self {
        TenantCounts {
            counts: ShardMap::with_capacity(16),
            scope,
        }
    }

    /// Takes one slot for `tenant`; `CapacityExceeded` with the cap's
    /// scope if it holds `max` already.
    pub(crate) fn take(&self, tenant: TenantId, max: u64) -> Result<()> {
        let (taken, _) = self.counts.upsert(tenant, |n| match n {
            Some(&n) if n >= max => Upsert::Keep(Err(n)),
            Some(&n) => Upsert::Put(n + 1, Ok(())),
            None if max == 0 => Upsert::Keep(Err(0)),
            None => Upsert::Put(1, Ok(())),
        });
        taken.map_err(|used| Error::capacity(self.scope, max, used))
    }

    /// The admission of a named object that reserves store-wide room:
    /// one of `tenant`'s slots (against `per_tenant`) first, so a tenant
    /// at its cap never holds store-wide room, then every store-wide part
    /// whole (`(counter, units, limit)`). A refusal of either takes
    /// nothing; the caller commits the reservation once the object is in
    /// its map, and gives the slot back if it never gets there.
    pub(crate) fn admit<'a>(
        &self,
        tenant: TenantId,
        per_tenant: u64,
        store_wide: &[(&'a Counter, u64, u64)],
    ) -> Result<Reservation<'a>> {
        self.take(tenant, per_tenant)?;
        Reservation::acquire_under(store_wide).inspect_err(|_| self.give(tenant))
    }

    /// Gives one slot of `tenant` back.
    pub(crate) fn give(&self, tenant: TenantId) {
        let emptied = self.counts.update(&tenant, |n| {
            *n -= 1;
            *n == 0
        });
        if emptied == Some(true) {
            self.counts
                .remove_if(&tenant, |&n| if n == 0 { Ok(()) } else { Err(()) });
        }
    }

    /// Slots `tenant` holds.
    pub(crate) fn of(&self, tenant: TenantId) -> u64 {
        self.counts.read(&tenant, |&n| n).unwrap_or(0)
    }

    /// Every tenant's count (for audits).
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn snapshot(&self) -> std::collections::BTreeMap<TenantId, u64> {
        let mut out = std::collections::BTreeMap::new();
        self.counts.for_each(|t, &n| {
            out.insert(*t, n);
        });
        out
    }
}
