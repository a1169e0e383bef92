//! `Holder`: who holds a lease or a named lock, as reads return it.

use smol_str::SmolStr;
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Who holds a lease or a named lock, as [`Store::get_lease`] and
/// [`Store::get_lock`] return it: a string that dereferences to `&str`.
///
/// A name of up to [`Holder::INLINE_BYTES`] bytes is kept inline, in the
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
/// [`Store::get_lease`]: crate::Store::get_lease
/// [`Store::get_lock`]: crate::Store::get_lock
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Holder(SmolStr);

impl Holder {
    /// The longest name, in bytes, kept inline: 23.
    pub const INLINE_BYTES: usize = 23;

    /// A holder named `name`.
    pub fn new(name: &str) -> Self {
        Holder(SmolStr::new(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// With the `serde` feature a holder is its name on the wire.
#[cfg(feature = "serde")]
impl serde::Serialize for Holder {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Holder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(d)?;
        Ok(Holder::new(&name))
    }
}

impl Deref for Holder {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Holder {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Holder {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Holder {
    fn from(name: &str) -> Self {
        Holder::new(name)
    }
}

impl From<String> for Holder {
    fn from(name: String) -> Self {
        Holder(SmolStr::from(name))
    }
}

impl From<Holder> for Arc<str> {
    fn from(h: Holder) -> Self {
        Arc::from(h.as_str())
    }
}

impl From<Holder> for String {
    fn from(h: Holder) -> Self {
        h.0.into()
    }
}

impl PartialEq<str> for Holder {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Holder {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Holder> for str {
    fn eq(&self, other: &Holder) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Holder> for &str {
    fn eq(&self, other: &Holder) -> bool {
        *self == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_reads_back_whatever_its_length() {
        for name in ["", "a", &"x".repeat(23), &"y".repeat(24), &"é".repeat(64)] {
            let h = Holder::new(name);
            assert_eq!(h.as_str(), name);
            assert_eq!(&*h, name);
            assert_eq!(h, name);
            assert_eq!(h.clone(), h);
            assert_eq!(format!("{h}"), name);
            assert_eq!(format!("{h:?}"), format!("{name:?}"));
            assert_eq!(Arc::<str>::from(h.clone()).as_ref(), name);
            assert_eq!(Holder::from(name.to_owned()), h);
        }
    }

    #[test]
    fn short_names_are_inline_and_long_ones_shared() {
        assert!(!Holder::new(&"x".repeat(Holder::INLINE_BYTES))
            .0
            .is_heap_allocated());
        assert!(Holder::new(&"x".repeat(Holder::INLINE_BYTES + 1))
            .0
            .is_heap_allocated());
    }
}
