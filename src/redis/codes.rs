//! The Redis engine's codes for the contract's collections and capacity
//! scopes, each written once: the letter a collection's keys, room and
//! removal events use in the Lua library, and the number a refusal names
//! its scope by. Everything else (the ceilings string a handle sends, the
//! events' decoding, the refusals' scopes, the library's event letters) is
//! derived from these two tables.

use crate::base::error::Scope;
use crate::contract::events::Collection;

/// A collection's letter in the library: its keys, its room under the
/// store-wide ceilings and its removal events. Every collection has one
/// (tombstones only for their removal events: this engine does not bound
/// them store-wide, ADR 0073).
pub(super) const fn letter(c: Collection) -> Option<u8> {
    Some(match c {
        Collection::Leases => b'l',
        Collection::Listings => b'p',
        Collection::Presence => b'm',
        Collection::Attempts => b'a',
        Collection::Replay => b'r',
        Collection::Idempotency => b'i',
        Collection::Locks => b'k',
        Collection::Streams => b's',
        Collection::Queues => b'q',
        Collection::Schedules => b'h',
        Collection::Tombstones => b't',
    })
}

/// The collection of `letter`, if any.
pub(super) fn collection_of(letter: u8) -> Option<Collection> {
    Collection::ALL
        .into_iter()
        .find(|&c| self::letter(c) == Some(letter))
}

/// The scope of every capacity refusal the library can answer, by its code
/// (the library's `CAPACITY` reply: code, limit, use).
pub(super) const SCOPES: [(i64, Scope); 38] = [
    (1, Scope::Tenant(Collection::Leases)),
    (2, Scope::Tenant(Collection::Locks)),
    (3, Scope::Parent(Collection::Locks)),
    (4, Scope::Tenant(Collection::Idempotency)),
    (5, Scope::Parent(Collection::Listings)),
    (6, Scope::Tenant(Collection::Listings)),
    (7, Scope::Parent(Collection::Attempts)),
    (8, Scope::Tenant(Collection::Attempts)),
    (9, Scope::Tenant(Collection::Replay)),
    (10, Scope::Parent(Collection::Presence)),
    (11, Scope::Tenant(Collection::Presence)),
    (12, Scope::Collection(Collection::Leases)),
    (13, Scope::Collection(Collection::Listings)),
    (14, Scope::Collection(Collection::Presence)),
    (15, Scope::Collection(Collection::Attempts)),
    (16, Scope::Collection(Collection::Replay)),
    (17, Scope::Collection(Collection::Idempotency)),
    (18, Scope::Collection(Collection::Locks)),
    (19, Scope::Tenant(Collection::Streams)),
    (20, Scope::Parent(Collection::Streams)),
    (21, Scope::StreamEntries),
    (22, Scope::StreamConsumers),
    (23, Scope::Collection(Collection::Streams)),
    (24, Scope::StreamBytesTotal),
    (25, Scope::StreamEntriesTotal),
    (26, Scope::Collection(Collection::Queues)),
    (27, Scope::QueueJobsTotal),
    (28, Scope::QueueBytesTotal),
    (29, Scope::Collection(Collection::Schedules)),
    (30, Scope::Tenant(Collection::Queues)),
    (31, Scope::QueueJobs),
    (32, Scope::QueueBytes),
    (33, Scope::QueueDeadLetters),
    (34, Scope::Tenant(Collection::Schedules)),
    (35, Scope::Holder(Collection::Leases)),
    (36, Scope::Holder(Collection::Listings)),
    (37, Scope::QueueUniqueKeys),
    (38, Scope::StreamGroupPending),
];

/// The scope a refusal's code names.
pub(super) fn scope_of(code: i64) -> Option<Scope> {
    SCOPES.iter().find(|(c, _)| *c == code).map(|&(_, s)| s)
}

/// The code of a scope (what the library answers a refusal of it with).
#[cfg(test)]
fn code_of(scope: Scope) -> Option<i64> {
    SCOPES.iter().find(|(_, s)| *s == scope).map(|&(c, _)| c)
}

/// The library's event letters, as the Lua line that defines them
/// (`@EVENT_LETTERS@` in `lua/prelude.lua`).
pub(super) fn event_letters_lua() -> String {
    let names = [
        ("E_LEASE", Collection::Leases),
        ("E_LISTING", Collection::Listings),
        ("E_MEMBER", Collection::Presence),
        ("E_ATTEMPT", Collection::Attempts),
        ("E_REPLAY", Collection::Replay),
        ("E_IDEM", Collection::Idempotency),
        ("E_LOCK", Collection::Locks),
        ("E_STREAM", Collection::Streams),
        ("E_QUEUE", Collection::Queues),
        ("E_SCHEDULE", Collection::Schedules),
        ("E_TOMB", Collection::Tombstones),
    ];
    let (lhs, rhs): (Vec<_>, Vec<_>) = names
        .iter()
        .map(|&(name, c)| {
            let l = letter(c).expect("every announced collection has a letter");
            (name, format!("'{}'", l as char))
        })
        .unzip();
    format!("local {} = {}", lhs.join(", "), rhs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_are_unique_and_name_their_collection() {
        for c in Collection::ALL {
            if let Some(l) = letter(c) {
                assert_eq!(collection_of(l), Some(c), "{c:?}");
            }
        }
        assert_eq!(collection_of(b'z'), None);
    }

    #[test]
    fn scope_codes_are_unique_both_ways() {
        for &(code, scope) in &SCOPES {
            assert_eq!(scope_of(code), Some(scope), "{code}");
            assert_eq!(code_of(scope), Some(code), "{scope:?}");
        }
        // Every store-wide ceiling this engine counts has its code (all
        // but tombstones, which it does not bound store-wide).
        for c in Collection::ALL {
            if c != Collection::Tombstones {
                assert!(code_of(Scope::Collection(c)).is_some(), "{c:?}");
            }
        }
    }
}
