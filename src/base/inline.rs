//! `InlineBytes`: up to 23 bytes kept in three words, the inline form of
//! a [`Name`](crate::Name) and of [`Attrs`](crate::Attrs), laid out as a
//! slot keeps them beside itself.

use std::num::NonZeroU64;
use zerocopy::{Immutable, IntoBytes};

/// Set in an inline value's length byte (lengths are at most 23), so its
/// first word is never zero: that one value tells an inline value from a
/// shared one, and a `Name` or `Attrs` is 24 bytes.
const MARK: u64 = 0x80;

/// Up to [`InlineBytes::MAX`] bytes in three words: the length in the low
/// byte of the first (with [`MARK`] set), the bytes after it in
/// little-endian order, zeros past them. A slot keeps the same three
/// words less the mark ([`InlineBytes::to_words`]).
///
/// Whole words, so that a value is made, moved and compared a word at a
/// time. (A length byte beside 23 bytes of an array was moved as one
/// byte, seven and sixteen; a load of a whole word from stores of those
/// widths is one the processor cannot forward from its store buffer, and
/// waits for: ADR 0077.)
///
/// The bytes past the length are zeros (equality compares words), and
/// only this module writes the fields.
#[derive(Clone, Copy, PartialEq, Eq, Debug, IntoBytes, Immutable)]
#[repr(C, align(8))]
pub(crate) struct InlineBytes {
    /// The length, marked, and the first seven bytes; little-endian.
    first: NonZeroU64,
    /// The other sixteen bytes; little-endian.
    rest: [u64; 2],
}

/// Up to eight bytes as a little-endian word, zeros above: loads of the
/// bytes themselves (overlapping where the length is not a power of two),
/// so that a value is made in registers and stored a word at a time.
#[inline(always)]
fn word_of(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!(n <= 8);
    if n >= 4 {
        let lo = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let hi = u64::from(u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]));
        lo | hi << ((n - 4) * 8)
    } else if n > 0 {
        u64::from(b[0]) | u64::from(b[n / 2]) << (n / 2 * 8) | u64::from(b[n - 1]) << ((n - 1) * 8)
    } else {
        0
    }
}

impl InlineBytes {
    /// The most bytes three words hold beside their length byte.
    pub(crate) const MAX: usize = 23;

    /// No bytes.
    pub(crate) const EMPTY: InlineBytes = InlineBytes {
        first: match NonZeroU64::new(MARK.to_le()) {
            Some(first) => first,
            None => panic!("the mark is not zero"),
        },
        rest: [0; 2],
    };

    /// `bytes` as a slot keeps them: the length in the first byte, then
    /// the bytes, little-endian, zeros after. `None` past
    /// [`MAX`](Self::MAX) bytes.
    #[inline(always)]
    pub(crate) fn words_of(bytes: &[u8]) -> Option<[u64; 3]> {
        let n = bytes.len();
        if n > Self::MAX {
            return None;
        }
        let (a, b) = (n.min(7), n.min(15));
        Some([
            n as u64 | word_of(&bytes[..a]) << 8,
            word_of(&bytes[a..b]),
            word_of(&bytes[b..]),
        ])
    }

    /// `bytes`, if there are at most `max` (at most [`MAX`](Self::MAX)).
    #[inline(always)]
    pub(crate) fn new(bytes: &[u8], max: usize) -> Option<InlineBytes> {
        if bytes.len() > max {
            return None;
        }
        Some(Self::of_words(Self::words_of(bytes)?))
    }

    /// The value three words of [`words_of`](Self::words_of)'s layout
    /// keep, if their length is at most `max` (at most
    /// [`MAX`](Self::MAX)); whatever the words held past the bytes reads
    /// as zeros. Never a panic, whatever the words.
    #[inline(always)]
    pub(crate) fn from_words(words: [u64; 3], max: usize) -> Option<InlineBytes> {
        let len = (words[0] & 0xFF) as usize;
        if len > max.min(Self::MAX) {
            return None;
        }
        let kept = len + 1;
        let words: [u64; 3] = std::array::from_fn(|i| match kept.saturating_sub(i * 8) {
            0 => 0,
            n if n >= 8 => words[i],
            n => words[i] & ((1 << (n * 8)) - 1),
        });
        Some(Self::of_words(words))
    }

    /// Three words whose length is at most [`MAX`](Self::MAX), with zeros
    /// past the bytes.
    #[inline(always)]
    fn of_words([w0, w1, w2]: [u64; 3]) -> InlineBytes {
        debug_assert!(w0 & 0xFF <= Self::MAX as u64);
        InlineBytes {
            // Never zero: the mark is set.
            first: NonZeroU64::new((w0 | MARK).to_le()).unwrap_or(NonZeroU64::MIN),
            rest: [w1.to_le(), w2.to_le()],
        }
    }

    /// The three words a slot keeps: [`words_of`](Self::words_of) of the
    /// bytes.
    #[inline(always)]
    pub(crate) fn to_words(self) -> [u64; 3] {
        [
            u64::from_le(self.first.get()) & !MARK,
            u64::from_le(self.rest[0]),
            u64::from_le(self.rest[1]),
        ]
    }

    /// The bytes' high bits, all of them: zero if every byte is ASCII.
    #[inline(always)]
    pub(crate) fn high_bits(self) -> u64 {
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let [w0, w1, w2] = self.to_words();
        ((w0 >> 8) | w1 | w2) & HIGH
    }

    /// How many bytes.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        (u64::from_le(self.first.get()) & !MARK & 0xFF) as usize
    }

    /// The bytes, read in place: the words are kept little-endian, so
    /// the value's bytes are the length byte and then these.
    #[inline(always)]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.as_bytes()[1..=self.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_reads_back_through_words_and_bytes() {
        for len in 0..=InlineBytes::MAX {
            let bytes: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37) | 1).collect();
            let inline = InlineBytes::new(&bytes, InlineBytes::MAX).expect("inline");
            assert_eq!(inline.len(), len);
            assert_eq!(inline.bytes(), &bytes[..]);
            let words = InlineBytes::words_of(&bytes).expect("words");
            assert_eq!(inline.to_words(), words);
            assert_eq!(
                InlineBytes::from_words(words, InlineBytes::MAX),
                Some(inline)
            );
            // A lower bound refuses what is longer.
            assert_eq!(
                InlineBytes::new(&bytes, len.saturating_sub(1)).is_some(),
                len == 0
            );
        }
        assert_eq!(InlineBytes::words_of(&[1; 24]), None);
        assert_eq!(InlineBytes::new(&[], 0), Some(InlineBytes::EMPTY));
        assert_eq!(InlineBytes::EMPTY.bytes(), b"");
    }

    #[test]
    fn words_past_the_length_read_as_zeros_and_any_words_are_safe() {
        let past = InlineBytes::from_words([1 | 0x6100 | 0xff << 40, 7, 9], InlineBytes::MAX);
        assert_eq!(past, InlineBytes::new(b"a", InlineBytes::MAX));
        assert_eq!(InlineBytes::from_words([24, 0, 0], InlineBytes::MAX), None);
        assert_eq!(
            InlineBytes::from_words([0xFF, 0, 0], InlineBytes::MAX),
            None
        );
        // A length within `MAX` but past the caller's bound.
        assert_eq!(InlineBytes::from_words([23, 0, 0], 22), None);
        for w0 in [0u64, !0xE0, 0x80, 0x17] {
            for w in [0, u64::MAX] {
                if let Some(v) = InlineBytes::from_words([w0, w, w], InlineBytes::MAX) {
                    assert_eq!(v.bytes().len(), (w0 & 0xFF) as usize);
                }
            }
        }
    }

    #[test]
    fn an_inline_value_and_its_shared_twin_fit_in_three_words() {
        enum Either {
            _Inline(InlineBytes),
            _Shared(std::sync::Arc<[u8]>),
        }
        assert_eq!(std::mem::size_of::<Either>(), 24);
    }
}
