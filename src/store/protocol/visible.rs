//! The visibility rule, in one place.
//!
//! A record is visible iff it is live (`now < deadline`), it is attached,
//! its tenant's epoch is the one it was made in, and every ancestor (its
//! listing, its lease) is visible too. Every read path applies this rule,
//! so revoking or expiring a parent hides everything under it in one step,
//! before any sweep. A record that is not visible answers exactly as a
//! missing one does (`NotFound`), except where a path documents a more
//! precise answer for the record itself (`Expired`, `Revoked` for a lease
//! while its tombstone lives, `ReplayRejected` for a consumed token).

use crate::base::error::Result;
use crate::base::ids::TenantId;
use crate::base::name::Name;
use crate::base::time::MonoTime;
use crate::store::Store;

/// What a record's visibility depends on besides its own liveness, read
/// from the record under its shard lock and checked after it is released
/// (no nested map calls).
pub(in crate::store) struct Ancestry {
    /// The record's tenant epoch has not ended.
    pub(in crate::store) owner_valid: bool,
    /// The lease it hangs from, if any.
    pub(in crate::store) lease: Option<u64>,
    /// The listing (key and publication) it hangs from, if any.
    pub(in crate::store) listing: Option<(Name, u64)>,
}

impl Store {
    /// Whether every ancestor in `a` is visible (and the owner valid).
    pub(in crate::store) fn ancestors_visible(
        &self,
        tenant: TenantId,
        a: &Ancestry,
        now: MonoTime,
    ) -> bool {
        a.owner_valid
            && a.lease
                .is_none_or(|seq| self.lease_status(tenant, seq, now).is_ok())
            && a.listing.as_ref().is_none_or(|(key, origin)| {
                self.listing_origin(&(tenant, &**key), now)
                    .is_ok_and(|seen| seen == *origin)
            })
    }

    /// Whether a lease is visible: `Ok`, or why not.
    pub(in crate::store) fn lease_status(
        &self,
        tenant: TenantId,
        seq: u64,
        now: MonoTime,
    ) -> Result<()> {
        self.lease_remaining(tenant, seq, now).map(drop)
    }
}
