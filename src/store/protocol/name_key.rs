//! The key of a named record (a listing, a presence record, an idempotency
//! key, a lock), `(tenant, name)`, and its borrowed form.
//!
//! A table stores the owned key, [`NameKey`], whose name is inline up to 23
//! bytes (ADR 0046): comparing it during a lookup reads the table's own
//! entry, not a second allocation. The tenant's index, a lease's lists of
//! children and the wheel's entries hold the same inline form; the API's
//! `Arc<str>` names (a read's info, a removal's event) are made from it
//! where they are handed out. A lookup needs no owned key: a caller
//! holding the name as `&str` looks the record up through
//! `&(tenant, name) as &dyn NameLookup`. `dyn NameLookup` is a borrowed form of
//! `NameKey` (`NameKey` borrows as it, and both hash and compare the
//! same), so a heartbeat, a lock's renewal or read, and every step a join
//! takes on its listing allocate nothing to find their record. A creation
//! builds the owned key (no allocation up to 23 bytes), and so do the
//! paths that return the name (reads of a listing or a presence record)
//! and the removals.

use crate::base::ids::TenantId;

use crate::base::name::Name;
use crate::mem::named_slab::{OwnedSlotKey, SlotKey, KEY_WORDS};
use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// A named record's key: its tenant and its name, inline up to
/// [`Name`]'s 23 bytes (ADR 0046), so a lookup compares the name
/// without a second cache line to fetch.
pub(crate) type NameKey = (TenantId, Name);

/// A tenant and a name, owned ([`NameKey`]) or borrowed.
pub(crate) trait NameLookup {
    fn tenant(&self) -> TenantId;
    fn name(&self) -> &str;
}

impl NameLookup for NameKey {
    fn tenant(&self) -> TenantId {
        self.0
    }
    fn name(&self) -> &str {
        &self.1
    }
}

impl NameLookup for (TenantId, &str) {
    fn tenant(&self) -> TenantId {
        self.0
    }
    fn name(&self) -> &str {
        self.1
    }
}

impl<'a> Borrow<dyn NameLookup + 'a> for NameKey {
    fn borrow(&self) -> &(dyn NameLookup + 'a) {
        self
    }
}

/// The same hash as the tuple's: the tenant's, then the name's.
impl Hash for dyn NameLookup + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.tenant().hash(state);
        self.name().hash(state);
    }
}

impl PartialEq for dyn NameLookup + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.tenant() == other.tenant() && self.name() == other.name()
    }
}

impl Eq for dyn NameLookup + '_ {}

/// A borrowed name becomes an owned key only where a table must keep it
/// (a record's wheel entry moved earlier).
impl ToOwned for dyn NameLookup + '_ {
    type Owned = NameKey;

    fn to_owned(&self) -> NameKey {
        (self.tenant(), Name::new(self.name()))
    }
}

/// A named key's words beside its slot: the tenant, then the name's
/// three ([`Name::to_words`]). The name's first word carries its length
/// (at most 23) in its low byte, so no key's words are
/// [`KEPT`](crate::mem::named_slab::KEPT).
fn words_of(tenant: TenantId, name: &str) -> Option<[u64; KEY_WORDS]> {
    let [a, b, c] = Name::to_words(name)?;
    Some([tenant.0, a, b, c])
}

impl SlotKey for NameKey {
    #[inline]
    fn key_words(&self) -> Option<[u64; KEY_WORDS]> {
        words_of(self.0, &self.1)
    }
}

impl OwnedSlotKey for NameKey {
    fn from_key_words([tenant, a, b, c]: [u64; KEY_WORDS]) -> Option<Self> {
        Some((TenantId(tenant), Name::from_words([a, b, c])?))
    }
}

impl SlotKey for dyn NameLookup + '_ {
    #[inline]
    fn key_words(&self) -> Option<[u64; KEY_WORDS]> {
        words_of(self.tenant(), self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_name_hashes_and_compares_as_its_owned_key() {
        let hasher = ahash::RandomState::new();
        let owned: NameKey = (TenantId(7), Name::new("lobby"));
        let borrowed: &dyn NameLookup = &(TenantId(7), "lobby");
        let as_name: &dyn NameLookup = owned.borrow();
        assert_eq!(hasher.hash_one(&owned), hasher.hash_one(borrowed));
        assert!(as_name == borrowed);
        for other in [(TenantId(8), "lobby"), (TenantId(7), "lobbz")] {
            assert!(as_name != &other as &dyn NameLookup);
        }
        assert_eq!(borrowed.to_owned(), owned);
    }

    /// A key's words are the same from its owned and its borrowed form,
    /// make the key back, and are never the words of a key kept in its
    /// record.
    #[test]
    fn a_keys_words_are_its_own_from_either_form() {
        use crate::mem::named_slab::KEPT;
        for name in ["", "lobby", &"n".repeat(23)] {
            let owned: NameKey = (TenantId(u64::MAX), Name::new(name));
            let borrowed: &dyn NameLookup = &(TenantId(u64::MAX), name);
            let words = owned.key_words().expect("inline");
            assert_eq!(borrowed.key_words(), Some(words));
            assert_ne!(words, KEPT);
            assert_eq!(NameKey::from_key_words(words), Some(owned));
        }
        let long: &dyn NameLookup = &(TenantId(1), &*"n".repeat(24));
        assert_eq!(long.key_words(), None);
        assert_ne!(
            (TenantId(1), Name::new("a")).key_words(),
            (TenantId(2), Name::new("a")).key_words()
        );
    }

    /// A key's name up to 23 bytes is held in the key itself, so a lookup
    /// compares it without fetching another allocation; a longer one is
    /// out of line and still found by its borrowed form.
    #[test]
    fn names_up_to_23_bytes_are_inline_in_the_key() {
        let hasher = ahash::RandomState::new();
        for (name, inline) in [
            ("a", true),
            (&*"n".repeat(23), true),
            (&*"n".repeat(24), false),
        ] {
            let borrowed: &dyn NameLookup = &(TenantId(1), name);
            let owned = borrowed.to_owned();
            assert_eq!(!owned.1.is_shared(), inline, "{} bytes", name.len());
            assert_eq!(hasher.hash_one(&owned), hasher.hash_one(borrowed));
            assert!(Borrow::<dyn NameLookup>::borrow(&owned) == borrowed);
        }
        assert_eq!(std::mem::size_of::<NameKey>(), 32);
    }
}
