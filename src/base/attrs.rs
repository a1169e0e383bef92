//! `Attrs`: a listing's or presence record's attributes, as the record
//! keeps them and as reads return them.

use crate::base::inline::InlineBytes;
use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// A listing's or presence record's attributes: bytes, dereferencing to
/// `&[u8]`.
///
/// Attributes of up to [`Attrs::INLINE_BYTES`] bytes (a game mode and a
/// slot count, a codec list) are kept inline, in the record and in this
/// value: making the record allocates nothing for them, and a read copies
/// them out without writing memory other threads read. Longer attributes
/// (up to `StoreConfig::attrs_bytes_max`) are shared, and a copy
/// increments their reference count.
///
/// ```
/// use relaystore::{Store, TenantId};
/// use std::time::Duration;
///
/// let store = Store::builder().build()?;
/// let lease = store.grant(TenantId(1), "host-a", Duration::from_secs(30), None)?;
/// store.publish(TenantId(1), lease.id, "lobby-1", b"mode=ffa;slots=8", None)?;
/// let listing = store.get_listing(TenantId(1), "lobby-1")?;
/// assert_eq!(listing.attrs, b"mode=ffa;slots=8");
/// assert_eq!(&listing.attrs[..4], b"mode");
/// # Ok::<(), relaystore::Error>(())
/// ```
#[derive(Clone)]
pub struct Attrs(Repr);

#[derive(Clone)]
enum Repr {
    Inline(InlineBytes),
    Shared(Arc<[u8]>),
}

impl Attrs {
    /// The most bytes kept inline: 22 (an `Attrs` is 24 bytes, the size
    /// of a [`Name`](crate::Name)).
    pub const INLINE_BYTES: usize = 22;

    /// No attributes.
    pub const EMPTY: Attrs = Attrs(Repr::Inline(InlineBytes::EMPTY));

    /// The attributes `bytes`: inline if short, else shared.
    #[inline]
    pub fn new(bytes: &[u8]) -> Self {
        match InlineBytes::new(bytes, Attrs::INLINE_BYTES) {
            Some(inline) => Attrs(Repr::Inline(inline)),
            None => Attrs(Repr::Shared(Arc::from(bytes))),
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline(inline) => inline.bytes(),
            Repr::Shared(bytes) => bytes,
        }
    }

    /// Whether the bytes are kept in a shared allocation (longer than
    /// [`INLINE_BYTES`](Self::INLINE_BYTES)).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared(_))
    }

    /// The attributes as three words a record keeps beside its slot: the
    /// length in the first byte, then the bytes, little-endian, zeros
    /// after (the layout of [`Name::to_words`](crate::Name)). `None` for
    /// attributes longer than [`INLINE_BYTES`](Self::INLINE_BYTES).
    #[inline]
    pub(crate) fn to_words(&self) -> Option<[u64; 3]> {
        match &self.0 {
            Repr::Inline(inline) => Some(inline.to_words()),
            Repr::Shared(_) => None,
        }
    }

    /// The attributes three words keep ([`to_words`](Self::to_words));
    /// `None` for words that are no attributes' (a length past the
    /// inline width), never a panic.
    #[inline]
    pub(crate) fn from_words(words: [u64; 3]) -> Option<Attrs> {
        // Zeros past the bytes whatever the words held there, as every
        // inline value keeps.
        InlineBytes::from_words(words, Attrs::INLINE_BYTES)
            .map(|inline| Attrs(Repr::Inline(inline)))
    }
}

impl Default for Attrs {
    fn default() -> Self {
        Attrs::EMPTY
    }
}

impl Deref for Attrs {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for Attrs {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Attrs {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for Attrs {
    fn eq(&self, other: &Attrs) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Attrs {}

impl Hash for Attrs {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl PartialOrd for Attrs {
    fn partial_cmp(&self, other: &Attrs) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Attrs {
    fn cmp(&self, other: &Attrs) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl PartialEq<[u8]> for Attrs {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl PartialEq<&[u8]> for Attrs {
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_bytes() == *other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for Attrs {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.as_bytes() == other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Attrs {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.as_bytes() == *other
    }
}

impl fmt::Debug for Attrs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_bytes(), f)
    }
}

impl From<&[u8]> for Attrs {
    fn from(bytes: &[u8]) -> Self {
        Attrs::new(bytes)
    }
}

impl<const N: usize> From<&[u8; N]> for Attrs {
    fn from(bytes: &[u8; N]) -> Self {
        Attrs::new(bytes)
    }
}

impl From<Vec<u8>> for Attrs {
    fn from(bytes: Vec<u8>) -> Self {
        if bytes.len() <= Attrs::INLINE_BYTES {
            Attrs::new(&bytes)
        } else {
            Attrs(Repr::Shared(Arc::from(bytes)))
        }
    }
}

impl From<Arc<[u8]>> for Attrs {
    /// Short attributes are copied inline; longer ones keep the
    /// allocation.
    fn from(bytes: Arc<[u8]>) -> Self {
        if bytes.len() <= Attrs::INLINE_BYTES {
            Attrs::new(&bytes)
        } else {
            Attrs(Repr::Shared(bytes))
        }
    }
}

impl From<Attrs> for Arc<[u8]> {
    fn from(attrs: Attrs) -> Self {
        match attrs.0 {
            Repr::Inline(_) => Arc::from(attrs.as_bytes()),
            Repr::Shared(bytes) => bytes,
        }
    }
}

impl From<Attrs> for Vec<u8> {
    fn from(attrs: Attrs) -> Self {
        attrs.as_bytes().to_vec()
    }
}

/// With the `serde` feature attributes are a sequence of bytes, as an
/// `Arc<[u8]>` or a `Vec<u8>` is.
#[cfg(feature = "serde")]
impl serde::Serialize for Attrs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.as_bytes())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Attrs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <Vec<u8> as serde::Deserialize>::deserialize(d).map(Attrs::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_are_24_bytes_like_a_name() {
        assert_eq!(std::mem::size_of::<Attrs>(), 24);
        assert_eq!(
            std::mem::size_of::<Attrs>(),
            std::mem::size_of::<crate::base::name::Name>()
        );
    }

    #[test]
    fn every_length_reads_back_and_only_long_ones_are_shared() {
        for len in 0..=Attrs::INLINE_BYTES + 2 {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37)).collect();
            let made = [
                Attrs::new(&bytes),
                Attrs::from(bytes.clone()),
                Attrs::from(Arc::<[u8]>::from(&bytes[..])),
            ];
            for a in made {
                assert_eq!(a.as_bytes(), &bytes[..], "{len} bytes");
                assert_eq!(a.len(), len);
                assert_eq!(a.is_shared(), len > Attrs::INLINE_BYTES, "{len} bytes");
                assert_eq!(a, Attrs::new(&bytes));
                assert_eq!(a.clone(), a);
                assert_eq!(Arc::<[u8]>::from(a.clone()).as_ref(), &bytes[..]);
                assert_eq!(Vec::from(a.clone()), bytes);
                assert_eq!(format!("{a:?}"), format!("{:?}", &bytes[..]));
            }
        }
    }

    #[test]
    fn attrs_compare_and_hash_by_their_bytes_alone() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |a: &Attrs| {
            let mut h = DefaultHasher::new();
            a.hash(&mut h);
            h.finish()
        };
        let long = vec![b'z'; Attrs::INLINE_BYTES + 1];
        let (a, b) = (Attrs::new(&long), Attrs::from(long.clone()));
        assert_eq!(a, b);
        assert_eq!(hash(&a), hash(&b));
        assert!(Attrs::new(b"a") < Attrs::new(b"b"));
        assert!(Attrs::new(b"a") < Attrs::new(&long));
        assert_eq!(Attrs::default(), Attrs::EMPTY);
        assert!(Attrs::EMPTY.is_empty());
        assert_eq!(Attrs::new(b"mode"), b"mode");
        assert_eq!(Attrs::new(b"mode"), &b"mode"[..]);
    }

    #[test]
    fn inline_attrs_round_trip_through_three_words() {
        for len in 0..=Attrs::INLINE_BYTES + 1 {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(151)).collect();
            let attrs = Attrs::new(&bytes);
            match attrs.to_words() {
                Some(words) => {
                    assert_eq!(words[0] & 0xFF, len as u64);
                    assert_eq!(Attrs::from_words(words), Some(attrs), "{len} bytes");
                }
                None => assert!(len > Attrs::INLINE_BYTES, "{len} bytes"),
            }
        }
        assert_eq!(Attrs::from_words([23, 0, 0]), None);
        // Bytes past the length are not the value's.
        let noisy = Attrs::from_words([2 | 0x6261 << 8 | 0xFF << 24, u64::MAX, u64::MAX]);
        assert_eq!(noisy.as_deref(), Some(&b"ab"[..]));
        assert_eq!(noisy.unwrap().to_words(), Attrs::new(b"ab").to_words());
        assert_eq!(Attrs::from_words([u64::MAX; 3]), None);
    }
}
