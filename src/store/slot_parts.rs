//! Parts of a kind's words beside its slot that more than one kind keeps
//! (ADR 0076, ADR 0078): its attributes, and the mark that lets a read
//! that takes no lock trust its owner's epoch.

use super::tenant::Revocations;
use crate::base::attrs::Attrs;
use crate::base::sync::{AtomicU64, Ordering};

/// The first word of [`AttrsWords`] for attributes kept in the record (no
/// length an inline value has).
const LONG_ATTRS: u64 = u8::MAX as u64;

/// A record's attributes, kept here, and only here, while they fit
/// ([`Attrs::to_words`]); longer ones stay in the record, and the words
/// say so.
pub(super) struct AttrsWords([AtomicU64; 3]);

impl Default for AttrsWords {
    fn default() -> Self {
        AttrsWords(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl AttrsWords {
    fn words(&self) -> [u64; 3] {
        self.0.each_ref().map(|w| w.load(Ordering::Acquire))
    }

    /// Keeps `attrs`: in the words if they fit (the record's `kept` left
    /// empty), else in `kept`. Under the slot's lock.
    pub(super) fn store(&self, kept: &mut Attrs, attrs: Attrs) {
        let words = match attrs.to_words() {
            Some(words) => {
                *kept = Attrs::EMPTY;
                words
            }
            None => {
                *kept = attrs;
                [LONG_ATTRS, 0, 0]
            }
        };
        for (word, w) in self.0.iter().zip(words) {
            word.store(w, Ordering::Release);
        }
    }

    /// Moves the record's attributes in, as it enters its slot.
    pub(super) fn fill(&self, kept: &mut Attrs) {
        let attrs = std::mem::take(kept);
        self.store(kept, attrs);
    }

    /// Moves them back into the record, as it leaves its slot.
    pub(super) fn empty(&self, kept: &mut Attrs) {
        if let Some(attrs) = Attrs::from_words(self.words()) {
            *kept = attrs;
        }
    }

    /// Runs `see` on the attributes, from the words or from the record's
    /// `kept`. Under the slot's lock.
    pub(super) fn with<R>(&self, kept: &Attrs, see: impl FnOnce(&Attrs) -> R) -> R {
        match Attrs::from_words(self.words()) {
            Some(attrs) => see(&attrs),
            None => see(kept),
        }
    }

    /// The words of attributes kept here, for a read that takes no lock
    /// (to make into [`Attrs`] once the read is known whole); `None` if
    /// they are kept in the record.
    #[inline]
    pub(super) fn peek(&self) -> Option<[u64; 3]> {
        let words = self.words();
        (words[0] != LONG_ATTRS).then_some(words)
    }
}

/// The store's tenant-revocation count at which a record was last seen
/// visible by its owner's epoch under its slot's lock ([`Revocations`]),
/// or [`Revocations::NEVER`]: a read that takes no lock trusts the epoch
/// only while the count is still this.
pub(super) struct ValidAt(AtomicU64);

impl Default for ValidAt {
    fn default() -> Self {
        ValidAt(AtomicU64::new(Revocations::NEVER))
    }
}

impl ValidAt {
    /// Never seen valid (a record entering its slot).
    pub(super) fn reset(&self) {
        self.0.store(Revocations::NEVER, Ordering::Release);
    }

    /// Records, under the slot's lock, that the record was seen `valid`
    /// as of `revocations` (read before the check, with no revocation at
    /// work).
    pub(super) fn mark(&self, valid: bool, revocations: u64) {
        if valid
            && Revocations::settled(revocations)
            && self.0.load(Ordering::Relaxed) != revocations
        {
            self.0.store(revocations, Ordering::Release);
        }
    }

    /// Whether no tenant revocation began since the record was seen valid.
    #[inline]
    pub(super) fn still(&self, revocations: &Revocations) -> bool {
        revocations.still(self.0.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_long_marker_is_no_inline_length() {
        assert_eq!(Attrs::from_words([LONG_ATTRS, 0, 0]), None);
        let words = AttrsWords::default();
        let mut kept = Attrs::new(&[7; Attrs::INLINE_BYTES + 1]);
        words.fill(&mut kept);
        assert_eq!(words.peek(), None, "long attributes stay in the record");
        assert_eq!(kept.len(), Attrs::INLINE_BYTES + 1);
        words.store(&mut kept, Attrs::new(b"short"));
        assert!(kept.is_empty(), "short ones leave the record");
        assert_eq!(words.with(&kept, |a| a.to_vec()), b"short");
        words.empty(&mut kept);
        assert_eq!(kept, b"short");
    }
}
