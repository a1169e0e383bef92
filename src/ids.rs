//! Identifiers and one-time tokens the store hands out.
//!
//! Every id and token carries the **incarnation** of the store that issued it
//! (64 random bits drawn when the store is created), so an id from before a
//! restart is recognised and refused with [`Error::Restarted`](crate::Error)
//! rather than looked up. Token secrets are 128 bits from the OS CSPRNG and
//! are compared in constant time.

use crate::error::{Error, Result};
use std::fmt;
use subtle::ConstantTimeEq;

/// An isolation scope: an application, game or customer.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(pub u64);

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tenant-{}", self.0)
    }
}

/// Fills `buf` from the OS CSPRNG. A failure is reported as
/// [`Error::ServiceUnavailable`]: the store cannot issue a secret, so it
/// refuses rather than issue a weak one.
pub(crate) fn random_bytes(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|_| Error::ServiceUnavailable)
}

macro_rules! store_id {
    ($(#[$doc:meta])* $name:ident, $tag:literal) => {
        $(#[$doc])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash)]
        pub struct $name {
            incarnation: u64,
            seq: u64,
        }

        impl $name {
            pub(crate) fn new(incarnation: u64, seq: u64) -> Self {
                $name { incarnation, seq }
            }

            pub(crate) fn seq(self) -> u64 {
                self.seq
            }

            pub(crate) fn incarnation(self) -> u64 {
                self.incarnation
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

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($tag, "-{:016x}-{:x}"), self.incarnation, self.seq)
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

/// Length of a token's secret in bytes (128 bits).
pub const TOKEN_SECRET_BYTES: usize = 16;

/// A one-time join token: the attempt it belongs to plus a 128-bit secret.
///
/// `Debug` never prints the secret, and equality is constant-time.
#[derive(Clone, Copy)]
pub struct JoinToken {
    attempt: AttemptId,
    secret: [u8; TOKEN_SECRET_BYTES],
}

impl JoinToken {
    pub(crate) fn issue(attempt: AttemptId) -> Result<Self> {
        let mut secret = [0; TOKEN_SECRET_BYTES];
        random_bytes(&mut secret)?;
        Ok(JoinToken { attempt, secret })
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

    /// Inverse of [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(bytes: &[u8; 16 + TOKEN_SECRET_BYTES]) -> Self {
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

impl fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinToken")
            .field("attempt", &self.attempt)
            .field("secret", &"<redacted>")
            .finish()
    }
}
