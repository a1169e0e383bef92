//! `Name`: a short string as reads return it — a lease's or lock's
//! holder (`Holder`), a listing's key, a member's name — and as records
//! keep it.

use crate::base::inline::InlineBytes;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
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
/// assert!(!info.holder.is_shared());
/// # Ok::<(), relaystore::Error>(())
/// ```
///
/// [`ListingInfo::key`]: crate::ListingInfo::key
/// [`PresenceInfo::member`]: crate::PresenceInfo::member
#[derive(Clone)]
pub struct Name(Repr);

/// Who holds a lease or a named lock, as [`Store::get_lease`] and
/// [`Store::get_lock`] return it: a [`Name`].
///
/// [`Store::get_lease`]: crate::Store::get_lease
/// [`Store::get_lock`]: crate::Store::get_lock
pub type Holder = Name;

#[derive(Clone)]
enum Repr {
    Inline(InlineBytes),
    Shared(Arc<str>),
}

/// An inline name's bytes as a `&str`. The one rule this `unsafe` rests
/// on: **an inline name's bytes are UTF-8**. Only [`Name::new`] (a copy
/// of a `&str`), [`Name::from_words`] (which checks) and `Name::default`
/// (empty) make an inline name.
#[inline]
#[allow(unsafe_code)] // An inline name's bytes are UTF-8: ADR 0077.
fn as_str(inline: &InlineBytes) -> &str {
    let bytes = inline.bytes();
    debug_assert!(std::str::from_utf8(bytes).is_ok());
    // SAFETY: the bytes are UTF-8 (the rule above): `Name::new` copies
    // them from a `&str`, `from_words` makes an inline name only of bytes
    // it checked, `Name::default`'s are none; `Repr` is private to this
    // module, which makes an inline name nowhere else.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

impl Name {
    /// The longest name, in bytes, kept inline: 23.
    pub const INLINE_BYTES: usize = 23;

    /// The name `name`: inline up to [`Name::INLINE_BYTES`] bytes, shared
    /// beyond.
    #[inline(always)]
    pub fn new(name: &str) -> Self {
        match InlineBytes::new(name.as_bytes(), Name::INLINE_BYTES) {
            Some(inline) => Name(Repr::Inline(inline)),
            None => Name::shared(name),
        }
    }

    /// A name past the inline width. Apart, so that [`Name::new`] is small
    /// enough to be made where it is called: its three words are then
    /// stored where the caller keeps them, with no call between.
    #[cold]
    #[inline(never)]
    fn shared(name: &str) -> Self {
        Name(Repr::Shared(Arc::from(name)))
    }

    /// The name.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline(inline) => as_str(inline),
            Repr::Shared(name) => name,
        }
    }

    /// Whether the name is kept in a shared allocation (longer than
    /// [`INLINE_BYTES`](Self::INLINE_BYTES)).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared(_))
    }

    /// `name` as three words a record keeps beside its slot: its length
    /// in the first byte, then its bytes, little-endian, zeros after.
    /// `None` for a name longer than [`Name::INLINE_BYTES`].
    pub(crate) fn to_words(name: &str) -> Option<[u64; 3]> {
        InlineBytes::words_of(name.as_bytes())
    }

    /// The name three words keep ([`Name::to_words`]); `None` for words
    /// that are no name's (a length past the inline width, bytes that are
    /// not UTF-8), never a panic. A name of ASCII bytes (every byte below
    /// `0x80`, checked a word at a time) is not checked again as UTF-8,
    /// and the words become the name as they are: checking and copying
    /// the bytes were a third of a lease read's cost (ADR 0077).
    #[inline]
    pub(crate) fn from_words(words: [u64; 3]) -> Option<Name> {
        // Zeros past the name whatever the words held there, so names
        // compare by their words.
        let inline = InlineBytes::from_words(words, Name::INLINE_BYTES)?;
        if inline.high_bits() != 0 {
            // Made only of bytes that are UTF-8 (the rule on `as_str`).
            std::str::from_utf8(inline.bytes()).ok()?;
        }
        Some(Name(Repr::Inline(inline)))
    }
}

impl Default for Name {
    fn default() -> Self {
        Name(Repr::Inline(InlineBytes::EMPTY))
    }
}

impl PartialEq for Name {
    /// Two inline names compare by their words, zeros past the bytes
    /// included (fixed widths: no call to `memcmp`).
    fn eq(&self, other: &Name) -> bool {
        match (&self.0, &other.0) {
            (Repr::Inline(a), Repr::Inline(b)) => a == b,
            _ => self.as_str() == other.as_str(),
        }
    }
}

impl Eq for Name {}

/// As its string hashes, so a map keyed by names finds one by a `&str`.
impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// With the `serde` feature a name is its string on the wire.
#[cfg(feature = "serde")]
impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
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
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Name {
    fn from(name: &str) -> Self {
        Name::new(name)
    }
}

impl From<String> for Name {
    fn from(name: String) -> Self {
        Name::new(&name)
    }
}

impl From<Name> for Arc<str> {
    fn from(h: Name) -> Self {
        match h.0 {
            Repr::Inline(inline) => Arc::from(as_str(&inline)),
            Repr::Shared(name) => name,
        }
    }
}

impl From<Name> for String {
    fn from(h: Name) -> Self {
        h.as_str().to_owned()
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
    fn every_length_up_to_the_inline_width_is_kept_inline() {
        for len in 0..=Name::INLINE_BYTES + 2 {
            for name in ["n".repeat(len), " ".repeat(len), "\n".repeat(len)] {
                let made = Name::new(&name);
                assert_eq!(made.as_str(), name, "{len} bytes");
                assert_eq!(made.len(), len);
                assert_eq!(made.is_shared(), len > Name::INLINE_BYTES);
            }
        }
        // A first word that is never zero tells inline from shared apart.
        assert_eq!(std::mem::size_of::<Name>(), 24);
    }

    #[test]
    fn names_order_hash_and_compare_as_their_strings() {
        let hasher = ahash::RandomState::new();
        let names = ["", "a", "ab", "b", &"x".repeat(23), &"x".repeat(24), "é"];
        for a in names {
            for b in names {
                let (na, nb) = (Name::new(a), Name::new(b));
                assert_eq!(na.cmp(&nb), a.cmp(b), "{a:?} {b:?}");
                assert_eq!(na == nb, a == b);
            }
            assert_eq!(hasher.hash_one(Name::new(a)), hasher.hash_one(a));
        }
    }

    /// The checked reading `Name::from_words` must agree with for any
    /// words: the length byte, then the bytes checked as UTF-8.
    fn from_words_checked(words: [u64; 3]) -> Option<Name> {
        let buf: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let len = usize::from(buf[0]);
        let bytes = buf.get(1..=len).filter(|_| len <= Name::INLINE_BYTES)?;
        std::str::from_utf8(bytes).ok().map(Name::new)
    }

    #[test]
    fn names_up_to_the_inline_width_round_trip_through_three_words() {
        for len in 0..=Name::INLINE_BYTES {
            for name in ["n".repeat(len), "é".repeat(len / 2), "\u{7f}".repeat(len)] {
                let words = Name::to_words(&name).expect("inline");
                assert_eq!(Name::from_words(words).as_deref(), Some(&*name));
            }
        }
        assert_eq!(Name::to_words(&"x".repeat(Name::INLINE_BYTES + 1)), None);
        // Words no name left: a length past the inline width, bytes not
        // UTF-8 (inside the length or in the zeros after it).
        assert_eq!(Name::from_words([24, 0, 0]), None);
        assert_eq!(Name::from_words([0xFF, 0, 0]), None);
        assert_eq!(Name::from_words([1 | 0xff00, 0, 0]), None);
        assert_eq!(Name::from_words([1 | 0x6100, 0, 0]).as_deref(), Some("a"));
        // Bytes past the length are not the name's: dropped.
        let past = Name::from_words([1 | 0x6100, 0, 0x80 << 56]);
        assert_eq!(past.as_deref(), Some("a"));
        assert_eq!(past, Some(Name::new("a")));
    }

    proptest::proptest! {
        /// Whatever the words (a torn read's, a bug's), the read that skips
        /// the UTF-8 check for ASCII answers as the checked one does.
        #[test]
        fn any_words_read_as_the_checked_reading_does(
            len in 0u64..=26,
            high in proptest::prelude::any::<bool>(),
            a in proptest::prelude::any::<u64>(),
            b in proptest::prelude::any::<u64>(),
            c in proptest::prelude::any::<u64>(),
        ) {
            // Mostly ASCII (the fast way), sometimes any bytes.
            let mask = if high { u64::MAX } else { 0x7F7F_7F7F_7F7F_7F7F };
            let words = [(a & mask & !0xFF) | len, b & mask, c & mask];
            let (read, checked) = (Name::from_words(words), from_words_checked(words));
            proptest::prop_assert_eq!(read.as_deref(), checked.as_deref());
            // Equal by their words too: the bytes past the name are zeros.
            proptest::prop_assert_eq!(read, checked);
        }
    }
}
