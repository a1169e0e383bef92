//! What a wake channel delivers, the same on every engine.

use crate::base::ids::TenantId;
use std::sync::Arc;

/// What a listener receives: one notify of its channel, in the order the
/// notifies reached it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Wake {
    /// The tenant the channel belongs to.
    pub tenant: TenantId,
    /// The channel.
    pub channel: Arc<str>,
    /// What the notify carried (empty for [`notify`](crate::Store::notify);
    /// at most `wake_payload_bytes_max` bytes from
    /// [`notify_with`](crate::Store::notify_with)).
    pub payload: Payload,
    /// Wakes this listener lost just before this one.
    pub missed: Missed,
}

impl Wake {
    /// A wake of `channel` with no payload and nothing missed before it.
    pub fn new(tenant: TenantId, channel: &str) -> Self {
        Wake {
            tenant,
            channel: Arc::from(channel),
            payload: Payload::default(),
            missed: Missed::None,
        }
    }

    /// The same wake carrying `payload`.
    pub fn with_payload(mut self, payload: &[u8]) -> Self {
        self.payload = Payload::from(payload);
        self
    }

    /// The same wake, with `missed` lost before it.
    pub fn with_missed(mut self, missed: Missed) -> Self {
        self.missed = missed;
        self
    }
}

/// A wake's payload: bytes shared by every listener the notify reached
/// (one copy), or none. Reads as a `&[u8]`; an empty one holds nothing, so
/// a wake without a payload costs no allocation and no shared count.
#[derive(Clone, Default)]
pub struct Payload(Option<Arc<[u8]>>);

impl Payload {
    /// Whether `self` and `other` are the same copy (one notify's payload,
    /// as two listeners received it). Empty payloads share nothing.
    pub fn same_copy(&self, other: &Payload) -> bool {
        matches!((&self.0, &other.0), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
    }

    /// The payload of one notify, to hand to every listener (`None` when
    /// empty).
    pub(crate) fn shared(bytes: &[u8]) -> Payload {
        Payload((!bytes.is_empty()).then(|| Arc::from(bytes)))
    }
}

impl From<&[u8]> for Payload {
    fn from(bytes: &[u8]) -> Self {
        Payload::shared(bytes)
    }
}

impl std::ops::Deref for Payload {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl AsRef<[u8]> for Payload {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Payload {}

impl std::hash::Hash for Payload {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match std::str::from_utf8(self) {
            Ok(text) => write!(f, "Payload({text:?})"),
            Err(_) => write!(f, "Payload({:?})", &**self),
        }
    }
}

/// Wakes a listener lost before the one it receives.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Missed {
    /// None: every notify since the previous wake reached this listener.
    #[default]
    None,
    /// The listener's queue (`wake_queue_max` wakes) was full, so this many
    /// of its oldest wakes were dropped, payloads and all, just before
    /// this one.
    Dropped(u64),
    /// Wakes may have been lost and could not be counted: the Redis
    /// engine's Pub/Sub connection dropped and came back. This wake carries
    /// no payload; look at the state the channel is about.
    Unknown,
}

impl Missed {
    /// What a listener lost before a wake that already had `self` lost
    /// before it, once the wake just before it (which had `earlier` lost
    /// before it) is dropped too.
    pub(crate) fn after_dropping(self, earlier: Missed) -> Missed {
        match (self, earlier) {
            (Missed::Unknown, _) | (_, Missed::Unknown) => Missed::Unknown,
            (Missed::None, Missed::None) => Missed::Dropped(1),
            (Missed::Dropped(n), Missed::None) | (Missed::None, Missed::Dropped(n)) => {
                Missed::Dropped(n.saturating_add(1))
            }
            (Missed::Dropped(a), Missed::Dropped(b)) => {
                Missed::Dropped(a.saturating_add(b).saturating_add(1))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Missed;

    #[test]
    fn a_payload_reads_as_its_bytes_and_an_empty_one_holds_nothing() {
        use super::Payload;
        let a = Payload::from(&b"seat"[..]);
        let b = a.clone();
        assert_eq!(&*a, b"seat");
        assert!(a.same_copy(&b));
        assert!(!a.same_copy(&Payload::from(&b"seat"[..])));
        assert_eq!(a, Payload::from(&b"seat"[..]), "equal by content");
        assert_eq!(Payload::from(&[][..]), Payload::default());
        assert!(Payload::default().0.is_none());
        assert_eq!(format!("{a:?}"), "Payload(\"seat\")");
    }

    #[test]
    fn dropping_a_wake_counts_it_and_what_it_had_missed() {
        use Missed::*;
        for (own, earlier, want) in [
            (None, None, Dropped(1)),
            (Dropped(2), None, Dropped(3)),
            (None, Dropped(4), Dropped(5)),
            (Dropped(2), Dropped(4), Dropped(7)),
            (Unknown, Dropped(4), Unknown),
            (None, Unknown, Unknown),
            (Dropped(u64::MAX), Dropped(1), Dropped(u64::MAX)),
        ] {
            assert_eq!(own.after_dropping(earlier), want, "{own:?} {earlier:?}");
        }
    }
}
