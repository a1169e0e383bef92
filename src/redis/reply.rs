//! A function's reply: an array whose first element is a code
//! (`lua/shared/00_state.lua` names them), then the values.

use crate::base::attrs::Attrs;
use crate::base::error::{ConflictReason, Error, Result};
use redis::Value;
use std::sync::Arc;

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal,)*) => {
        $($(#[$doc])* pub(super) const $name: i64 = $code;)*
        /// Every code with its name, as the library's header defines them.
        const CODES: &[(&str, i64)] = &[$((stringify!($name), $code)),*];
    };
}

codes! {
    OK = 0,
    NOT_FOUND = 1,
    EXPIRED = 2,
    REVOKED = 3,
    CONFLICT = 4,
    HELD = 5,
    CAPACITY = 6,
    STALE = 7,
    UNKNOWN = 8,
    RESTARTED = 9,
    MISMATCH = 10,
    REPLAYED = 11,
    DRAINING = 12,
    /// The call needs room under a store-wide ceiling that only the engine
    /// can take (on a cluster): nothing was written; the needs follow.
    ROOM = 13,
    /// Streams: the name is taken with other settings.
    EXISTS = 14,
    /// Streams: an offset trimmed away (with the first held).
    TRIMMED = 15,
    /// A bad argument only the server can judge, with its reason's number
    /// (its place in [`INVALID_REASONS`], from 1).
    INVALID = 16,
    /// Queues: a claim that is not the job's live one.
    STALE_CLAIM = 17,
    /// Schedules: a fence that does not hold the scheduler lock.
    LEADERSHIP_LOST = 18,
}

/// The reasons an `INVALID` reply names by number (its place here, from
/// 1), each with the name the library gives that number.
const INVALID_REASONS: [(&str, &str); 3] = [
    (
        "BAD_PAYLOAD",
        crate::contract::stream::PAYLOAD_OVER_BYTES_MAX,
    ),
    ("PAST_THE_END", crate::contract::stream::PAST_THE_END),
    (
        "START_PAST_THE_END",
        crate::contract::group::START_PAST_THE_END,
    ),
];

/// The reasons a `CONFLICT` reply names by number (its place here, from
/// 1), each with its name in the library's `CONFLICTED` table.
const CONFLICT_REASONS: [(&str, ConflictReason); 7] = [
    ("VERSION", ConflictReason::Version),
    ("NAME_TAKEN", ConflictReason::NameTaken),
    ("OTHER_LEASE", ConflictReason::OtherLease),
    ("NOT_BOUND", ConflictReason::NotBound),
    ("BOUND_ELSEWHERE", ConflictReason::BoundElsewhere),
    ("COMMIT_BEHIND", ConflictReason::CommitBehind),
    ("STREAM_MOVED", ConflictReason::StreamMoved),
];

/// The reply codes and the `INVALID` reasons as the library's header
/// defines them (`@REPLY_CODES@` in `lua/shared/00_state.lua`), one
/// `local` a line, and the `CONFLICT` reasons as one table (`CONFLICTED`,
/// one local, under Lua's 200): no code is typed in Lua.
pub(super) fn codes_lua() -> String {
    let codes = CODES.iter().map(|&(name, code)| (name, code));
    let reasons = (1..).zip(INVALID_REASONS).map(|(n, (name, _))| (name, n));
    let mut header: String = codes
        .chain(reasons)
        .map(|(name, code)| format!("local {name} = {code}\n"))
        .collect();
    let conflicts: Vec<String> = (1..)
        .zip(CONFLICT_REASONS)
        .map(|(n, (name, _))| format!("{name} = {n}"))
        .collect();
    header.push_str(&format!(
        "local CONFLICTED = {{{}}}\n",
        conflicts.join(", ")
    ));
    header
}

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
                    .ok_or_else(|| malformed("an unknown reason"))?
                    .1,
            },
            CONFLICT => Error::Conflict {
                current_version: self.uint(1)?,
                reason: usize::try_from(self.int(2)?)
                    .ok()
                    .and_then(|n| CONFLICT_REASONS.get(n.wrapping_sub(1)))
                    .ok_or_else(|| malformed("an unknown conflict"))?
                    .1,
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

/// Refuses a reply with other than `len` values: a typed reply
/// (`scripts::<Op>Reply`) reads all of one and nothing past it.
pub(super) fn exactly(reply: &Reply, len: usize) -> Result<()> {
    if reply.len() == len {
        Ok(())
    } else {
        Err(malformed(&format!(
            "{} values where {len} were expected",
            reply.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code and reason is defined once in the header, with the
    /// number the engine reads it by.
    #[test]
    fn the_library_defines_each_reply_code_once_by_its_number() {
        let header = codes_lua();
        let mut codes: Vec<i64> = CODES.iter().map(|c| c.1).collect();
        codes.dedup();
        assert_eq!(codes, (0..=LEADERSHIP_LOST).collect::<Vec<_>>());
        for (name, code) in CODES {
            assert_eq!(header.matches(&format!("local {name} = ")).count(), 1);
            assert!(header.contains(&format!("local {name} = {code}\n")));
        }
        assert!(header.contains("local PAST_THE_END = 2\n"));
        assert!(header.contains("local CONFLICTED = {VERSION = 1, NAME_TAKEN = 2, "));
    }

    /// Each conflict reason has one number, and a reply with it reads
    /// back as that reason.
    #[test]
    fn each_conflict_reason_reads_back_from_its_number() {
        let names: Vec<ConflictReason> = CONFLICT_REASONS.iter().map(|r| r.1).collect();
        assert_eq!(names, ConflictReason::ALL);
        let refusal = |n| {
            let reply = Reply::new(vec![Value::Int(CONFLICT), Value::Int(7), Value::Int(n)]);
            reply.unwrap().refusal().unwrap_err()
        };
        for (n, reason) in (1..).zip(ConflictReason::ALL) {
            assert_eq!(refusal(n), Error::conflict(reason, 7));
        }
        for unknown in [0, 8] {
            assert!(matches!(refusal(unknown), Error::BackendUnavailable { .. }));
        }
    }
}
