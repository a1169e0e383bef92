//! `Name`: a short string as reads return it — a lease's or lock's
//! holder (`Holder`), a listing's key, a member's name.

use smol_str::SmolStr;
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A name as reads return it: a lease's or named lock's holder
/// ([`Holder`]), a listing's key ([`ListingInfo::key`]), a member's name
/// ([`PresenceInfo::member`]). A string that dereferences to `&str`.
///
/// A name of up to [`Name::INLINE_BYTES`] bytes is kept inline, in the
/// record and in this value: copying it out of the record copies 24 bytes,
/// with no allocation and no write to memory other threads read. A longer
/// name (names go up to `StoreConfig::name_bytes_max`) is shared, and a
/// copy increments its reference count.
///
/// ```
/// use relaystore::{Store, TenantId};
/// use std::time::Duration;
///
/// let store = Store::builder().build()?;
/// let lease = store.grant(TenantId(1), "host-a", Duration::from_secs(30), None)?;
/// let info = store.get_lease(TenantId(1), lease.id)?;
/// assert_eq!(info.holder, "host-a");
/// assert_eq!(info.holder.len(), 6);
/// # Ok::<(), relaystore::Error>(())
/// ```
///
/// [`ListingInfo::key`]: crate::ListingInfo::key
/// [`PresenceInfo::member`]: crate::PresenceInfo::member
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(SmolStr);

/// Who holds a lease or a named lock, as [`Store::get_lease`] and
/// [`Store::get_lock`] return it: a [`Name`].
///
/// [`Store::get_lease`]: crate::Store::get_lease
/// [`Store::get_lock`]: crate::Store::get_lock
pub type Holder = Name;

/// `name` as a `SmolStr`: inline up to [`Name::INLINE_BYTES`] bytes,
/// shared beyond. Every name a caller hands the store (a key to look up
/// or keep, a name to answer with) is made here. Each length has its own
/// arm, so each copy has a width known at compile time; `SmolStr::new`
/// first looks for a run of spaces it could keep as a static, then
/// copies with a `memcpy` of variable length (ADR 0075).
#[inline]
pub(crate) fn smol(name: &str) -> SmolStr {
    macro_rules! by_length {
        ($($n:literal)*) => {
            match name.len() {
                $($n => SmolStr::new_inline(&name[..$n]),)*
                _ => SmolStr::new(name),
            }
        };
    }
    by_length!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23)
}

impl Name {
    /// The longest name, in bytes, kept inline: 23.
    pub const INLINE_BYTES: usize = 23;

    /// The name `name`.
    pub fn new(name: &str) -> Self {
        Name(smol(name))
    }

    /// The name kept as the record keeps it: no copy of its bytes.
    pub(crate) fn of(name: SmolStr) -> Self {
        Name(name)
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// With the `serde` feature a name is its string on the wire.
#[cfg(feature = "serde")]
impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(d)?;
        Ok(Name::new(&name))
    }
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Name {
    fn from(name: &str) -> Self {
        Name::new(name)
    }
}

impl From<String> for Name {
    fn from(name: String) -> Self {
        Name(SmolStr::from(name))
    }
}

impl From<Name> for Arc<str> {
    fn from(h: Name) -> Self {
        Arc::from(h.as_str())
    }
}

impl From<Name> for String {
    fn from(h: Name) -> Self {
        h.0.into()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_whatever_its_length() {
        for name in ["", "a", &"x".repeat(23), &"y".repeat(24), &"é".repeat(64)] {
            let h = Name::new(name);
            assert_eq!(h.as_str(), name);
            assert_eq!(&*h, name);
            assert_eq!(h, name);
            assert_eq!(h.clone(), h);
            assert_eq!(format!("{h}"), name);
            assert_eq!(format!("{h:?}"), format!("{name:?}"));
            assert_eq!(Arc::<str>::from(h.clone()).as_ref(), name);
            assert_eq!(Name::from(name.to_owned()), h);
        }
    }

    #[test]
    fn every_length_makes_the_same_string_as_smol_str_does() {
        for len in 0..=Name::INLINE_BYTES + 2 {
            for name in ["n".repeat(len), " ".repeat(len), "\n".repeat(len)] {
                let made = smol(&name);
                assert_eq!(made, SmolStr::new(&name), "{len} bytes");
                assert_eq!(made.len(), len);
                // (`SmolStr` keeps long runs of spaces as static strings.)
                if len <= Name::INLINE_BYTES || name.starts_with('n') {
                    assert_eq!(made.is_heap_allocated(), len > Name::INLINE_BYTES);
                }
            }
        }
    }

    #[test]
    fn short_names_are_inline_and_long_ones_shared() {
        assert!(!Name::new(&"x".repeat(Name::INLINE_BYTES))
            .0
            .is_heap_allocated());
        assert!(Name::new(&"x".repeat(Name::INLINE_BYTES + 1))
            .0
            .is_heap_allocated());
    }
}
