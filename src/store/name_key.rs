//! The key of a named record (a listing, a presence record, an idempotency
//! key, a lock), `(tenant, name)`, and its borrowed form.
//!
//! A table stores the owned key, [`NameKey`], whose name is shared with the
//! records and events that carry it. A lookup needs no owned key: a caller
//! holding the name as `&str` looks the record up through
//! `&(tenant, name) as &dyn Name`. `dyn Name` is a borrowed form of
//! `NameKey` (`NameKey` borrows as it, and both hash and compare the
//! same), so a heartbeat, a lock's renewal or read, and every step a join
//! takes on its listing allocate nothing to find their record. A creation
//! builds the owned key, and so, for now, do the paths that return the
//! name (reads of a listing or a presence record) and the removals.

use crate::ids::TenantId;
use crate::sync::Arc;
use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// A named record's key: its tenant and its name.
pub(crate) type NameKey = (TenantId, Arc<str>);

/// A tenant and a name, owned ([`NameKey`]) or borrowed.
pub(crate) trait Name {
    fn tenant(&self) -> TenantId;
    fn name(&self) -> &str;
}

impl Name for NameKey {
    fn tenant(&self) -> TenantId {
        self.0
    }
    fn name(&self) -> &str {
        &self.1
    }
}

impl Name for (TenantId, &str) {
    fn tenant(&self) -> TenantId {
        self.0
    }
    fn name(&self) -> &str {
        self.1
    }
}

impl<'a> Borrow<dyn Name + 'a> for NameKey {
    fn borrow(&self) -> &(dyn Name + 'a) {
        self
    }
}

/// The same hash as the tuple's: the tenant's, then the name's.
impl Hash for dyn Name + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.tenant().hash(state);
        self.name().hash(state);
    }
}

impl PartialEq for dyn Name + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.tenant() == other.tenant() && self.name() == other.name()
    }
}

impl Eq for dyn Name + '_ {}

/// A borrowed name becomes an owned key only where a table must keep it
/// (a record's wheel entry moved earlier).
impl ToOwned for dyn Name + '_ {
    type Owned = NameKey;

    fn to_owned(&self) -> NameKey {
        (self.tenant(), Arc::from(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_name_hashes_and_compares_as_its_owned_key() {
        let hasher = ahash::RandomState::new();
        let owned: NameKey = (TenantId(7), Arc::from("lobby"));
        let borrowed: &dyn Name = &(TenantId(7), "lobby");
        let as_name: &dyn Name = owned.borrow();
        assert_eq!(hasher.hash_one(&owned), hasher.hash_one(borrowed));
        assert!(as_name == borrowed);
        for other in [(TenantId(8), "lobby"), (TenantId(7), "lobbz")] {
            assert!(as_name != &other as &dyn Name);
        }
        assert_eq!(borrowed.to_owned(), owned);
    }
}
