//! A function's reply: an array whose first element is a code
//! (`lua/shared/00_state.lua` names them), then the values.

use crate::base::attrs::Attrs;
use crate::base::error::{Error, Result};
use redis::Value;
use std::sync::Arc;

pub(super) const OK: i64 = 0;
pub(super) const NOT_FOUND: i64 = 1;
pub(super) const EXPIRED: i64 = 2;
pub(super) const REVOKED: i64 = 3;
pub(super) const CONFLICT: i64 = 4;
pub(super) const HELD: i64 = 5;
pub(super) const CAPACITY: i64 = 6;
pub(super) const STALE: i64 = 7;
pub(super) const UNKNOWN: i64 = 8;
pub(super) const RESTARTED: i64 = 9;
pub(super) const MISMATCH: i64 = 10;
pub(super) const REPLAYED: i64 = 11;
pub(super) const DRAINING: i64 = 12;
pub(super) const ROOM: i64 = 13;
pub(super) const EXISTS: i64 = 14;
pub(super) const TRIMMED: i64 = 15;
pub(super) const INVALID: i64 = 16;
pub(super) const STALE_CLAIM: i64 = 17;
pub(super) const LEADERSHIP_LOST: i64 = 18;

/// The reasons an `INVALID` reply names by number.
const INVALID_REASONS: [&str; 3] = [
    crate::contract::stream::PAYLOAD_OVER_BYTES_MAX,
    crate::contract::stream::PAST_THE_END,
    crate::contract::group::START_PAST_THE_END,
];

/// A reply the engine did not expect: a bug, or a Redis that is not ours.
fn malformed(what: &str) -> Error {
    Error::backend(format!("malformed function reply: {what}"), true)
}

pub(super) struct Reply(Vec<Value>);

impl Reply {
    pub(super) fn new(values: Vec<Value>) -> Result<Self> {
        if values.is_empty() {
            return Err(malformed("empty"));
        }
        Ok(Reply(values))
    }

    pub(super) fn code(&self) -> Result<i64> {
        self.int(0)
    }

    pub(super) fn int(&self, at: usize) -> Result<i64> {
        match self.0.get(at) {
            Some(Value::Int(n)) => Ok(*n),
            other => Err(malformed(&format!("element {at} is {other:?}"))),
        }
    }

    pub(super) fn uint(&self, at: usize) -> Result<u64> {
        u64::try_from(self.int(at)?).map_err(|_| malformed("a negative count"))
    }

    pub(super) fn text(&self, at: usize) -> Result<Arc<str>> {
        match self.0.get(at) {
            Some(Value::BulkString(b)) => std::str::from_utf8(b)
                .map(Arc::from)
                .map_err(|_| malformed("text is not UTF-8")),
            Some(Value::SimpleString(s)) => Ok(Arc::from(s.as_str())),
            other => Err(malformed(&format!("element {at} is {other:?}"))),
        }
    }

    pub(super) fn bytes(&self, at: usize) -> Result<Arc<[u8]>> {
        match self.0.get(at) {
            Some(Value::BulkString(b)) => Ok(Arc::from(b.as_slice())),
            other => Err(malformed(&format!("element {at} is {other:?}"))),
        }
    }

    /// Attributes at `at`: short ones copied inline, with no allocation.
    pub(super) fn attrs(&self, at: usize) -> Result<Attrs> {
        match self.0.get(at) {
            Some(Value::BulkString(b)) => Ok(Attrs::new(b)),
            other => Err(malformed(&format!("element {at} is {other:?}"))),
        }
    }

    /// The reply nested at `at` (a transaction's reply holds one per
    /// change).
    pub(super) fn nested(&self, at: usize) -> Result<Reply> {
        match self.0.get(at) {
            Some(Value::Array(values)) => Reply::new(values.clone()),
            other => Err(malformed(&format!("element {at} is {other:?}"))),
        }
    }

    /// How many elements the reply has.
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// A time left in milliseconds (never negative).
    pub(super) fn millis(&self, at: usize) -> Result<std::time::Duration> {
        Ok(std::time::Duration::from_millis(
            self.int(at)?.max(0).unsigned_abs(),
        ))
    }

    /// The error a refusal code stands for; `Ok(())` for `OK`.
    pub(super) fn refusal(&self) -> Result<()> {
        let scope =
            |code| super::codes::scope_of(code).ok_or_else(|| malformed("unknown capacity scope"));
        Err(match self.code()? {
            OK => return Ok(()),
            NOT_FOUND => Error::NotFound,
            EXPIRED => Error::Expired,
            REVOKED => Error::Revoked,
            RESTARTED => Error::Restarted,
            MISMATCH => Error::IdempotencyMismatch,
            REPLAYED => Error::ReplayRejected,
            DRAINING => Error::Draining,
            EXISTS => Error::Exists,
            STALE_CLAIM => Error::StaleClaim,
            LEADERSHIP_LOST => Error::LeadershipLost,
            TRIMMED => Error::Trimmed {
                first: self.uint(1)?,
            },
            INVALID => Error::InvalidArgument {
                reason: usize::try_from(self.int(1)?)
                    .ok()
                    .and_then(|n| INVALID_REASONS.get(n.wrapping_sub(1)))
                    .ok_or_else(|| malformed("an unknown reason"))?,
            },
            CONFLICT => Error::Conflict {
                current_version: self.uint(1)?,
            },
            CAPACITY => Error::CapacityExceeded {
                scope: scope(self.int(1)?)?,
                limit: self.uint(2)?,
                used: self.uint(3)?,
            },
            code => return Err(malformed(&format!("unexpected code {code}"))),
        })
    }
}
