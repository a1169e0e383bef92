//! Long-term credentials (RFC 8489 §9.2): each user's key, computed once,
//! and stateless nonces.
//!
//! A nonce is its expiry (milliseconds on the store's clock, 16 hex digits)
//! followed by a tag (HMAC-SHA1 of the expiry under a per-process secret,
//! first 8 bytes, 16 hex digits). Checking one needs no state, so a flood of
//! unauthenticated requests costs the relay no memory; a nonce from another
//! process (or an earlier run) fails its tag and gets a 438 with a fresh
//! one, which a client retries.

use hmac::{Hmac, Mac};
use sha1::Sha1;
use std::collections::HashMap;
use std::time::Duration;
use stun_types::message::{IntegrityAlgorithm, IntegrityKey, LongTermKeyCredentials};

/// Length of a nonce in bytes.
pub const NONCE_LEN: usize = 32;

/// The users' keys: `MD5(user ":" realm ":" password)`.
pub struct Users {
    keys: HashMap<String, IntegrityKey>,
}

impl Users {
    /// Computes every user's key for `realm`.
    pub fn new(users: &[(String, String)], realm: &str) -> Users {
        let keys = users
            .iter()
            .map(|(name, password)| {
                let creds =
                    LongTermKeyCredentials::new(name.clone(), password.clone(), realm.to_string());
                (name.clone(), creds.make_key(IntegrityAlgorithm::Sha1))
            })
            .collect();
        Users { keys }
    }

    /// The key of `user`, if it is one.
    pub fn key(&self, user: &str) -> Option<&IntegrityKey> {
        self.keys.get(user)
    }
}

/// What a nonce check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceCheck {
    /// Issued here and not expired.
    Valid,
    /// Expired, or not issued by this process: 438 with a fresh one.
    Stale,
}

/// Issues and checks nonces.
pub struct Nonces {
    secret: [u8; 32],
    lifetime_ms: u64,
}

impl Nonces {
    /// Nonces valid for `lifetime`, under a fresh random secret.
    pub fn new(lifetime: Duration) -> Nonces {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).expect("the operating system's random source");
        Nonces {
            secret,
            lifetime_ms: u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn tag(&self, expiry: u64) -> u64 {
        let mut mac =
            Hmac::<Sha1>::new_from_slice(&self.secret).expect("HMAC takes a key of any length");
        mac.update(&expiry.to_be_bytes());
        let out = mac.finalize().into_bytes();
        u64::from_be_bytes(out[..8].try_into().expect("SHA-1 has 20 bytes"))
    }

    /// A nonce issued at `now_ms` (store clock).
    pub fn issue(&self, now_ms: u64) -> [u8; NONCE_LEN] {
        let expiry = now_ms.saturating_add(self.lifetime_ms);
        let mut out = [0u8; NONCE_LEN];
        hex_into(&mut out[..16], expiry);
        hex_into(&mut out[16..], self.tag(expiry));
        out
    }

    /// Checks a nonce a client sent back at `now_ms`.
    pub fn check(&self, nonce: &str, now_ms: u64) -> NonceCheck {
        let bytes = nonce.as_bytes();
        if bytes.len() != NONCE_LEN {
            return NonceCheck::Stale;
        }
        let (Some(expiry), Some(tag)) = (unhex(&bytes[..16]), unhex(&bytes[16..])) else {
            return NonceCheck::Stale;
        };
        // Compared as whole words: a forger learns nothing from timing
        // beyond "wrong", which the answer says anyway.
        if tag != self.tag(expiry) || now_ms >= expiry {
            return NonceCheck::Stale;
        }
        NonceCheck::Valid
    }
}

fn hex_into(out: &mut [u8], value: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, slot) in out.iter_mut().enumerate() {
        let shift = 60 - 4 * i;
        *slot = DIGITS[((value >> shift) & 0xf) as usize];
    }
}

fn unhex(text: &[u8]) -> Option<u64> {
    text.iter().try_fold(0u64, |acc, &c| {
        let digit = (c as char).to_digit(16)?;
        Some(acc << 4 | u64::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_valid_until_its_lifetime_ends() {
        let nonces = Nonces::new(Duration::from_secs(600));
        let nonce = nonces.issue(1_000);
        let text = std::str::from_utf8(&nonce).unwrap();
        assert_eq!(nonces.check(text, 1_000), NonceCheck::Valid);
        assert_eq!(nonces.check(text, 600_999), NonceCheck::Valid);
        assert_eq!(nonces.check(text, 601_000), NonceCheck::Stale);
    }

    #[test]
    fn a_forged_or_foreign_nonce_is_stale() {
        let ours = Nonces::new(Duration::from_secs(600));
        let theirs = Nonces::new(Duration::from_secs(600));
        let foreign = theirs.issue(0);
        assert_eq!(
            ours.check(std::str::from_utf8(&foreign).unwrap(), 0),
            NonceCheck::Stale
        );
        let mut later = ours.issue(0);
        later[0] = b'f'; // move the expiry without the tag
        assert_eq!(
            ours.check(std::str::from_utf8(&later).unwrap(), 0),
            NonceCheck::Stale
        );
        assert_eq!(ours.check("short", 0), NonceCheck::Stale);
    }
}
