//! Parts of a kind's words beside its slot that more than one kind keeps
//! (ADR 0076, ADR 0078): its attributes, the mark that lets a read that
//! takes no lock trust its owner's epoch, and the word a child keeps its
//! lease and its attachment in.

use crate::base::attrs::Attrs;
use crate::base::ids::SLOTS_MAX;
use crate::base::sync::{AtomicU64, Ordering};
use crate::store::tenant::Revocations;

/// The first word of [`AttrsWords`] for attributes kept in the record (no
/// length an inline value has).
const LONG_ATTRS: u64 = u8::MAX as u64;

/// A record's attributes, kept here, and only here, while they fit
/// ([`Attrs::to_words`]); longer ones stay in the record
/// ([`KeptAttrs`]), and the words say so.
pub(in crate::store) struct AttrsWords([AtomicU64; 3]);

/// What a record keeps of its attributes: nothing while they are in its
/// slot's words, which hold any that fit; longer ones, boxed (a word of
/// the slot, where [`Attrs`] would take three). A record made outside its
/// slot holds its attributes here until it enters the slot.
#[derive(Default)]
pub(in crate::store) struct KeptAttrs(Option<Box<Attrs>>);

impl KeptAttrs {
    /// A record's attributes before it enters its slot.
    pub(in crate::store) fn new(attrs: Attrs) -> Self {
        KeptAttrs((!attrs.is_empty()).then(|| Box::new(attrs)))
    }
}

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
    pub(in crate::store) fn store(&self, kept: &mut KeptAttrs, attrs: Attrs) {
        let words = match attrs.to_words() {
            Some(words) => {
                kept.0 = None;
                words
            }
            None => {
                kept.0 = Some(Box::new(attrs));
                [LONG_ATTRS, 0, 0]
            }
        };
        for (word, w) in self.0.iter().zip(words) {
            word.store(w, Ordering::Release);
        }
    }

    /// Moves the record's attributes in, as it enters its slot. A record
    /// leaving its slot leaves its attributes behind: its removal needs
    /// none of them.
    pub(in crate::store) fn fill(&self, kept: &mut KeptAttrs) {
        let attrs = kept.0.take().map(|attrs| *attrs).unwrap_or_default();
        self.store(kept, attrs);
    }

    /// Runs `see` on the attributes, from the words or from the record's
    /// `kept`. Under the slot's lock.
    pub(in crate::store) fn with<R>(&self, kept: &KeptAttrs, see: impl FnOnce(&Attrs) -> R) -> R {
        match Attrs::from_words(self.words()) {
            Some(attrs) => see(&attrs),
            None => see(kept.0.as_deref().unwrap_or(&Attrs::EMPTY)),
        }
    }

    /// The words of attributes kept here, for a read that takes no lock
    /// (to make into [`Attrs`] once the read is known whole); `None` if
    /// they are kept in the record.
    #[inline]
    pub(in crate::store) fn peek(&self) -> Option<[u64; 3]> {
        let words = self.words();
        (words[0] != LONG_ATTRS).then_some(words)
    }
}

/// A child record's lease (a lease's slab key, or [`ParentWord::NONE`])
/// and whether the child is attached (registered with its parents, so
/// visible), in one word of the record: a slab key's slot index never
/// reaches [`ATTACHED`]'s bit.
#[derive(Clone, Copy)]
pub(in crate::store) struct ParentWord(u64);

/// Set in a [`ParentWord`] once the child is attached.
const ATTACHED: u64 = 1 << 31;
const _: () = assert!(SLOTS_MAX <= ATTACHED);

impl ParentWord {
    /// No lease: no slab key is zero.
    pub(in crate::store) const NONE: u64 = 0;

    /// A child of `lease` (or of none), not yet attached.
    pub(in crate::store) fn new(lease: u64) -> Self {
        debug_assert_eq!(lease & ATTACHED, 0, "a slab key's index is under 2^28");
        ParentWord(lease)
    }

    /// The lease's key, or [`ParentWord::NONE`].
    pub(in crate::store) fn lease(self) -> u64 {
        self.0 & !ATTACHED
    }

    pub(in crate::store) fn attached(self) -> bool {
        self.0 & ATTACHED != 0
    }

    pub(in crate::store) fn attach(&mut self) {
        self.0 |= ATTACHED;
    }
}

/// The store's tenant-revocation count at which a record was last seen
/// visible by its owner's epoch under its slot's lock ([`Revocations`]),
/// or [`Revocations::NEVER`]: a read that takes no lock trusts the epoch
/// only while the count is still this.
pub(in crate::store) struct ValidAt(AtomicU64);

impl Default for ValidAt {
    fn default() -> Self {
        ValidAt(AtomicU64::new(Revocations::NEVER))
    }
}

impl ValidAt {
    /// Never seen valid (a record entering its slot).
    pub(in crate::store) fn reset(&self) {
        self.0.store(Revocations::NEVER, Ordering::Release);
    }

    /// Records, under the slot's lock, that the record was seen `valid`
    /// as of `revocations` (read before the check, with no revocation at
    /// work).
    pub(in crate::store) fn mark(&self, valid: bool, revocations: u64) {
        if valid
            && Revocations::settled(revocations)
            && self.0.load(Ordering::Relaxed) != revocations
        {
            self.0.store(revocations, Ordering::Release);
        }
    }

    /// Whether no tenant revocation began since the record was seen valid.
    #[inline]
    pub(in crate::store) fn still(&self, revocations: &Revocations) -> bool {
        revocations.still(self.0.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_word_keeps_the_lease_whole_beside_the_mark() {
        let largest = ((u64::from(u32::MAX) - 1) << 32) | (SLOTS_MAX - 1);
        for lease in [ParentWord::NONE, 1 << 32, largest] {
            let mut word = ParentWord::new(lease);
            assert!(!word.attached());
            word.attach();
            assert!(word.attached());
            assert_eq!(word.lease(), lease);
        }
    }

    #[test]
    fn the_long_marker_is_no_inline_length() {
        assert_eq!(Attrs::from_words([LONG_ATTRS, 0, 0]), None);
        let words = AttrsWords::default();
        let long = [7; Attrs::INLINE_BYTES + 1];
        let mut kept = KeptAttrs::new(Attrs::new(&long));
        words.fill(&mut kept);
        assert_eq!(words.peek(), None, "long attributes stay in the record");
        assert_eq!(words.with(&kept, |a| a.to_vec()), long);
        words.store(&mut kept, Attrs::new(b"short"));
        assert!(kept.0.is_none(), "short ones leave the record");
        assert_eq!(words.with(&kept, |a| a.to_vec()), b"short");
        let mut kept = KeptAttrs::new(Attrs::new(b"made short"));
        words.fill(&mut kept);
        assert!(kept.0.is_none(), "a record made with short ones keeps none");
        assert_eq!(words.with(&kept, |a| a.to_vec()), b"made short");
        assert!(KeptAttrs::new(Attrs::EMPTY).0.is_none(), "none boxed");
    }
}
