//! The record kinds, one file each: its record, its words beside its
//! slot, its `Stored` and `Child` implementations (and `OnLease` for a
//! kind a lease keeps), its operations and its retirement.

pub(in crate::store) mod idempotency;
pub(in crate::store) mod join;
pub(in crate::store) mod lease;
pub(in crate::store) mod listing;
pub(in crate::store) mod lock;
pub(in crate::store) mod presence;
pub(in crate::store) mod record;
