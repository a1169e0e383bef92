//! Identifiers and one-time tokens the store hands out.
//!
//! Every id and token carries the **incarnation** of the store that issued it
//! (64 random bits drawn when the store is created), so an id from before a
//! restart is recognised and refused with [`Error::Restarted`](crate::Error)
//! rather than looked up. Token secrets are 128 bits from a per-thread
//! ChaCha20 generator seeded from the OS CSPRNG (`secrets`), and are
//! compared in constant time.

use std::fmt;
use subtle::ConstantTimeEq;

/// An isolation scope: an application, game or customer. With the `serde`
/// feature it is its number on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct TenantId(pub u64);

/// With the `serde` feature, each listed type travels as its `Display`
/// text and is read back with its `FromStr`.
#[cfg(feature = "serde")]
macro_rules! serde_as_text {
    ($($t:ty),*) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let text = <String as serde::Deserialize>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tenant-{}", self.0)
    }
}

/// The most slots one slab holds: 2^28 (268,435,456) records. A store's
/// `leases_max` and `replay_max` may not exceed it.
pub const SLOTS_MAX: u64 = 1 << 28;

macro_rules! store_id {
    ($(#[$doc:meta])* $name:ident, $tag:literal) => {
        $(#[$doc])*
        ///
        /// Ids are totally ordered (incarnation first, then sequence), so
        /// they key sorted maps and sets; the order is issue order only for
        /// job ids.
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
            incarnation: u64,
            seq: u64,
        }

        impl $name {
            pub(crate) fn new(incarnation: u64, seq: u64) -> Self {
                $name { incarnation, seq }
            }

            #[allow(dead_code)] // Not every kind of id is read raw.
            pub(crate) fn seq(self) -> u64 {
                self.seq
            }

            #[allow(dead_code)] // Read by the Redis engine only.
            pub(crate) fn incarnation(self) -> u64 {
                self.incarnation
            }

            /// The sequence number, if the id is from `incarnation`;
            /// `None` if another incarnation issued it (the store answers
            /// `Restarted`).
            pub(crate) fn seq_in(self, incarnation: u64) -> Option<u64> {
                (self.incarnation == incarnation).then_some(self.seq)
            }

            /// The id as one number, for storing or sending it elsewhere.
            pub fn to_bits(self) -> u128 {
                (u128::from(self.incarnation) << 64) | u128::from(self.seq)
            }

            /// Inverse of `to_bits`. Any number is accepted; one the store
            /// never issued is simply not found (or, from another
            /// incarnation, refused with `Restarted`).
            pub fn from_bits(bits: u128) -> Self {
                $name {
                    incarnation: (bits >> 64) as u64,
                    seq: bits as u64,
                }
            }
        }

        impl $name {
            /// The id as 16 bytes (big-endian `to_bits`), for binary
            /// protocols; every engine's ids use this one encoding.
            pub fn to_bytes(self) -> [u8; 16] {
                self.to_bits().to_be_bytes()
            }

            /// Inverse of `to_bytes`.
            pub fn from_bytes(bytes: [u8; 16]) -> Self {
                Self::from_bits(u128::from_be_bytes(bytes))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($tag, "-{:016x}-{:x}"), self.incarnation, self.seq)
            }
        }

        /// Parses the [`Display`](fmt::Display) form back, so an id can
        /// travel to a client as text and return.
        impl std::str::FromStr for $name {
            type Err = ParseIdError;

            fn from_str(text: &str) -> std::result::Result<Self, ParseIdError> {
                let rest = text
                    .strip_prefix(concat!($tag, "-"))
                    .ok_or(ParseIdError)?;
                let (incarnation, seq) = rest.split_once('-').ok_or(ParseIdError)?;
                if incarnation.len() != 16 || seq.is_empty() || seq.len() > 16 {
                    return Err(ParseIdError);
                }
                let hex = |digits: &str| {
                    if digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                        u64::from_str_radix(digits, 16).map_err(|_| ParseIdError)
                    } else {
                        Err(ParseIdError)
                    }
                };
                Ok($name {
                    incarnation: hex(incarnation)?,
                    seq: hex(seq)?,
                })
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    };
}

store_id!(
    /// A lease, issued by [`Store::grant`](crate::Store::grant).
    LeaseId,
    "lease"
);
store_id!(
    /// A join attempt, issued by [`Store::begin_join`](crate::Store::begin_join).
    AttemptId,
    "attempt"
);
store_id!(
    /// A job, issued by [`Store::enqueue`](crate::Store::enqueue): unique in
    /// the store, increasing in enqueue order.
    JobId,
    "job"
);

/// Text that is not an id's or a token's `Display` form
/// (`lease-<16 hex>-<hex>`, `attempt-<16 hex>-<hex>`, `job-<16 hex>-<hex>`,
/// or a token's 43 URL-safe base64 characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a relaystore id")]
pub struct ParseIdError;

/// Length of a token's secret in bytes (128 bits).
pub const TOKEN_SECRET_BYTES: usize = 16;

/// A one-time join token: the attempt it belongs to plus a 128-bit secret.
///
/// `Debug` never prints the secret, and equality is constant-time. A relay
/// hands the token to its client as bytes ([`to_bytes`](Self::to_bytes)) or
/// as text: `Display` writes the same 32 bytes in URL-safe base64 without
/// padding (43 characters, safe in a URL, a header or JSON), and `FromStr`
/// reads it back.
///
/// ```
/// # let store = relaystore::Store::builder().build()?;
/// # let lease = store.grant(relaystore::TenantId(1), "host", std::time::Duration::from_secs(30), None)?;
/// # store.publish(relaystore::TenantId(1), lease.id, "lobby", b"", None)?;
/// let ticket = store.begin_join(relaystore::TenantId(1), "lobby", "client-7", std::time::Duration::from_secs(10), None)?;
/// let text = ticket.token.to_string();                      // to the client
/// assert_eq!(text.len(), 43);
/// let back: relaystore::JoinToken = text.parse().unwrap();  // from the client
/// assert_eq!(back, ticket.token);
/// # Ok::<(), relaystore::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct JoinToken {
    attempt: AttemptId,
    secret: [u8; TOKEN_SECRET_BYTES],
}

impl JoinToken {
    /// The token of `attempt` with `secret` (128 bits from the secrets
    /// generator, `base/secrets.rs`).
    pub(crate) fn with_secret(attempt: AttemptId, secret: [u8; TOKEN_SECRET_BYTES]) -> Self {
        JoinToken { attempt, secret }
    }

    /// The attempt this token belongs to.
    pub fn attempt(&self) -> AttemptId {
        self.attempt
    }

    pub(crate) fn secret(&self) -> &[u8; TOKEN_SECRET_BYTES] {
        &self.secret
    }

    /// Constant-time comparison of the secret with `secret`.
    pub(crate) fn matches(&self, secret: &[u8; TOKEN_SECRET_BYTES]) -> bool {
        self.secret.ct_eq(secret).into()
    }

    /// The token as bytes (attempt id, then secret), to hand to a client.
    pub fn to_bytes(&self) -> [u8; 16 + TOKEN_SECRET_BYTES] {
        let mut out = [0; 16 + TOKEN_SECRET_BYTES];
        out[..16].copy_from_slice(&self.attempt.to_bits().to_be_bytes());
        out[16..].copy_from_slice(&self.secret);
        out
    }

    /// Inverse of [`to_bytes`](Self::to_bytes). Any bytes are accepted; a
    /// token the store never issued is simply not found.
    pub fn from_bytes(bytes: [u8; 16 + TOKEN_SECRET_BYTES]) -> Self {
        let mut id = [0; 16];
        id.copy_from_slice(&bytes[..16]);
        let mut secret = [0; TOKEN_SECRET_BYTES];
        secret.copy_from_slice(&bytes[16..]);
        JoinToken {
            attempt: AttemptId::from_bits(u128::from_be_bytes(id)),
            secret,
        }
    }
}

impl PartialEq for JoinToken {
    fn eq(&self, other: &Self) -> bool {
        self.attempt == other.attempt && self.matches(&other.secret)
    }
}

impl Eq for JoinToken {}

/// The token's 32 bytes in URL-safe base64 without padding. This is the
/// secret itself: log it no more than the token.
impl fmt::Display for JoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use base64::Engine as _;
        f.write_str(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.to_bytes()))
    }
}

/// Parses the [`Display`](fmt::Display) form: exactly 43 URL-safe base64
/// characters (no padding) encoding 32 bytes; anything else is a
/// [`ParseIdError`].
impl std::str::FromStr for JoinToken {
    type Err = ParseIdError;

    fn from_str(text: &str) -> std::result::Result<Self, ParseIdError> {
        use base64::Engine as _;
        if text.len() != 43 {
            return Err(ParseIdError);
        }
        let mut bytes = [0; 16 + TOKEN_SECRET_BYTES];
        match base64::engine::general_purpose::URL_SAFE_NO_PAD.decode_slice(text, &mut bytes) {
            Ok(n) if n == bytes.len() => Ok(JoinToken::from_bytes(bytes)),
            _ => Err(ParseIdError),
        }
    }
}

impl fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinToken")
            .field("attempt", &self.attempt)
            .field("secret", &"<redacted>")
            .finish()
    }
}

#[cfg(feature = "serde")]
serde_as_text!(LeaseId, AttemptId, JobId, JoinToken);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_text_and_bits() {
        for (incarnation, seq) in [(0, 0), (u64::MAX, u64::MAX), (0x0123_4567_89ab_cdef, 42)] {
            let id = LeaseId::new(incarnation, seq);
            assert_eq!(id.to_string().parse::<LeaseId>(), Ok(id));
            assert_eq!(LeaseId::from_bits(id.to_bits()), id);
            let id = AttemptId::new(incarnation, seq);
            assert_eq!(id.to_string().parse::<AttemptId>(), Ok(id));
        }
    }

    #[test]
    fn tokens_round_trip_through_text_and_refuse_anything_else() {
        let token = JoinToken {
            attempt: AttemptId::new(0x0123_4567_89ab_cdef, 42),
            secret: [0xfb; TOKEN_SECRET_BYTES],
        };
        let text = token.to_string();
        assert_eq!(text.len(), 43);
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(text.parse::<JoinToken>(), Ok(token));
        assert_eq!(JoinToken::from_bytes(token.to_bytes()), token);
        let standard = text.replace('-', "+").replace('_', "/");
        assert_ne!(
            standard, text,
            "the secret's bytes give a URL-safe character"
        );
        for bad in [
            String::new(),
            text[..42].to_owned(),
            format!("{text}="),
            format!("{text}A"),
            "lease-0000000000000007-9".to_owned(),
            standard,
        ] {
            assert_eq!(bad.parse::<JoinToken>(), Err(ParseIdError), "{bad:?}");
        }
    }

    #[test]
    fn ids_order_by_incarnation_then_sequence() {
        let mut ids = vec![LeaseId::new(2, 1), LeaseId::new(1, 9), LeaseId::new(1, 3)];
        ids.sort();
        assert_eq!(
            ids,
            vec![LeaseId::new(1, 3), LeaseId::new(1, 9), LeaseId::new(2, 1)]
        );
        assert!(JobId::new(1, 1) < JobId::new(1, 2));
    }

    #[test]
    fn malformed_ids_are_refused() {
        let lease = LeaseId::new(7, 9).to_string();
        for bad in [
            "",
            "lease-",
            "lease-0000000000000007",
            "lease-0000000000000007-",
            "lease-7-9",
            "lease-000000000000000g-9",
            "lease-0000000000000007-+9",
            "lease-0000000000000007-10000000000000000",
            "attempt-0000000000000007-9",
        ] {
            assert_eq!(bad.parse::<LeaseId>(), Err(ParseIdError), "{bad:?}");
        }
        assert!(lease.parse::<AttemptId>().is_err());
    }
}
