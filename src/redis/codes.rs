//! The Redis engine's codes for the contract's collections and capacity
//! scopes: the letter a collection's keys, room and removal events use in
//! the Lua library (written once, in the collection's description), and
//! the number a refusal names its scope by (derived from the collection,
//! or a mechanism scope's place in one list). The ceilings string a handle
//! sends, the events' decoding, the refusals' scopes and the library's
//! header of event letters and scope codes are derived from these.

use crate::base::collection::{Kind, KINDS_MAX};
use crate::base::error::Scope;
use crate::contract::events::{Cause, Collection};

/// A collection's letter in the library: its keys, its room under the
/// store-wide ceilings and its removal events (tombstones only for their
/// removal events: this engine does not bound them store-wide, ADR 0073).
/// Written once, in the collection's description
/// ([`Collection::letter`]).
pub(super) const fn letter(c: Collection) -> u8 {
    c.letter()
}

/// The collection of `letter`, if any.
pub(super) fn collection_of(letter: u8) -> Option<Collection> {
    Collection::ALL
        .into_iter()
        .find(|&c| self::letter(c) == letter)
}

/// Each declared kind's letter in the library, by the kind's place: its
/// records' keys, its room under its store-wide ceiling and its scopes'
/// tables. Upper case, so no collection's letter; and none of the budgets'
/// sums (`S`, `Q`, `H`: `BUDGETS` in `lua/shared/30_room.lua` keeps a
/// budget's sums under its letter in upper case).
const KIND_LETTERS: &[u8; KINDS_MAX] = b"ABCDEFGIJKLMNOPR";

/// A declared kind's letter in the library.
pub(super) const fn kind_letter(kind: Kind) -> u8 {
    KIND_LETTERS[kind.index()]
}

/// The kind of `letter`, if it is a kind's.
pub(super) fn kind_of(letter: u8) -> Option<Kind> {
    KIND_LETTERS
        .iter()
        .position(|&l| l == letter)
        .and_then(Kind::at)
}

/// Each cause the library announces a removal with: its letter in an
/// event, and its name in the library (`EXPIRED_`, ...). A drain is a
/// process's own: no function announces one.
const CAUSES: [(Cause, u8, &str); 5] = [
    (Cause::Expired, b'e', "EXPIRED_"),
    (Cause::Revoked, b'r', "REVOKED_"),
    (Cause::Cascaded, b'c', "CASCADED_"),
    (Cause::Released, b'x', "RELEASED_"),
    (Cause::Consumed, b'u', "CONSUMED_"),
];

/// The cause of an event's `letter`, if any.
pub(super) fn cause_of(letter: u8) -> Option<Cause> {
    CAUSES
        .iter()
        .find(|&&(_, l, _)| l == letter)
        .map(|&(cause, ..)| cause)
}

/// A scope of one collection: its kind's digit in a code, and its table's
/// name in the library's header (keyed there by the collection's letter).
type PerCollection = (i64, fn(Collection) -> Scope, &'static str);

const PER_COLLECTION: [PerCollection; 4] = [
    (1, Scope::Tenant, "TENANT_SCOPE"),
    (2, Scope::Parent, "PARENT_SCOPE"),
    (3, Scope::Collection, "CEILING_SCOPE"),
    (4, Scope::Holder, "HOLDER_SCOPE"),
];

/// A declared kind's scopes: each one's digit in a code (a kind's code is
/// [`KIND_CODES`] plus its digit times 100 plus the kind's place), and the
/// table of the library's header its letter is a key of.
type PerKind = (i64, fn(Kind) -> Scope, &'static str);

const PER_KIND: [PerKind; 3] = [
    (1, Scope::KindTenant, "TENANT_SCOPE"),
    (2, Scope::KindParent, "PARENT_SCOPE"),
    (3, Scope::KindCeiling, "CEILING_SCOPE"),
];

/// Where the declared kinds' codes start: above every collection's.
const KIND_CODES: i64 = 1000;

/// The scopes of a mechanism's own limits the library can refuse with:
/// each one's name in the library's header. Its code is its place here,
/// from 1.
const MECHANISM_SCOPES: [(&str, Scope); 11] = [
    ("S_ENTRIES", Scope::StreamEntries),
    ("S_CONSUMERS", Scope::StreamConsumers),
    ("S_PENDING", Scope::StreamGroupPending),
    ("S_BYTES_TOTAL", Scope::StreamBytesTotal),
    ("S_ENTRIES_TOTAL", Scope::StreamEntriesTotal),
    ("Q_JOBS", Scope::QueueJobs),
    ("Q_BYTES", Scope::QueueBytes),
    ("Q_DEAD", Scope::QueueDeadLetters),
    ("Q_UNIQUE", Scope::QueueUniqueKeys),
    ("Q_JOBS_TOTAL", Scope::QueueJobsTotal),
    ("Q_BYTES_TOTAL", Scope::QueueBytesTotal),
];

/// The code a refusal of `scope` names it by (the library's `CAPACITY`
/// reply: code, limit, use). A scope of one collection is its kind's
/// digit times 100 plus the collection's place in [`Collection::ALL`], so
/// a new collection's scopes have codes without a line here; a
/// mechanism's scope is its place in [`MECHANISM_SCOPES`]. `None` for a
/// scope the library never answers (those only a process counts).
pub(super) fn code_of(scope: Scope) -> Option<i64> {
    let kind = PER_KIND.iter().find_map(|&(digit, of, _)| {
        (0..KINDS_MAX)
            .filter_map(Kind::at)
            .find(|&k| of(k) == scope)
            .map(|k| KIND_CODES + digit * 100 + k.index() as i64)
    });
    if kind.is_some() {
        return kind;
    }
    let per = PER_COLLECTION.iter().find_map(|&(digit, of, _)| {
        Collection::ALL
            .into_iter()
            .find(|&c| of(c) == scope)
            .map(|c| digit * 100 + c as i64)
    });
    per.or_else(|| {
        MECHANISM_SCOPES
            .iter()
            .position(|&(_, s)| s == scope)
            .map(|at| at as i64 + 1)
    })
}

/// The scope a refusal's code names.
pub(super) fn scope_of(code: i64) -> Option<Scope> {
    if code >= KIND_CODES {
        let (digit, at) = ((code - KIND_CODES) / 100, (code - KIND_CODES) % 100);
        let (_, of, _) = PER_KIND.iter().find(|&&(d, _, _)| d == digit)?;
        return Kind::at(usize::try_from(at).ok()?).map(of);
    }
    let (digit, at) = (code / 100, code % 100);
    if digit == 0 {
        let at = usize::try_from(code).ok()?.checked_sub(1)?;
        return MECHANISM_SCOPES.get(at).map(|&(_, s)| s);
    }
    let (_, of, _) = PER_COLLECTION.iter().find(|&&(d, _, _)| d == digit)?;
    let c = Collection::ALL.get(usize::try_from(at).ok()?)?;
    Some(of(*c))
}

/// The scope codes as the library's header defines them
/// (`@SCOPES@` in `lua/shared/00_state.lua`): a table per kind of collection
/// scope, keyed by the collection's letter (and a declared kind's scopes
/// by the kind's letter), and a name per mechanism scope. No code is
/// typed in Lua.
pub(super) fn scopes_lua() -> String {
    let mut out = String::new();
    for (_, of, table) in PER_COLLECTION {
        let kinds = PER_KIND
            .iter()
            .find(|&&(_, _, t)| t == table)
            .map(|&(_, of, _)| of);
        let rows: Vec<String> = Collection::ALL
            .into_iter()
            .filter_map(|c| Some(format!("{} = {}", letter(c) as char, code_of(of(c))?)))
            .chain(kinds.into_iter().flat_map(|of| {
                (0..KINDS_MAX).filter_map(Kind::at).filter_map(move |k| {
                    Some(format!("{} = {}", kind_letter(k) as char, code_of(of(k))?))
                })
            }))
            .collect();
        out.push_str(&format!("local {table} = {{{}}}\n", rows.join(", ")));
    }
    let (names, codes): (Vec<_>, Vec<_>) = MECHANISM_SCOPES
        .iter()
        .map(|&(name, scope)| {
            (
                name,
                code_of(scope).map_or(String::new(), |c| c.to_string()),
            )
        })
        .unzip();
    out.push_str(&format!(
        "local {} = {}",
        names.join(", "),
        codes.join(", ")
    ));
    out
}

/// The library's event letters, as the Lua lines that define them
/// (`@EVENT_LETTERS@` in `lua/shared/40_events.lua`): a collection's
/// (`E_LEASES`, ...), then a cause's (`EXPIRED_`, ...).
pub(super) fn event_letters_lua() -> String {
    let (lhs, rhs): (Vec<_>, Vec<_>) = Collection::ALL
        .into_iter()
        .map(|c| {
            let name = format!("E_{}", c.name().to_uppercase());
            (name, format!("'{}'", letter(c) as char))
        })
        .unzip();
    let (causes, letters): (Vec<_>, Vec<_>) = CAUSES
        .iter()
        .map(|&(_, l, name)| (name, format!("'{}'", l as char)))
        .unzip();
    format!(
        "local {} = {}\nlocal {} = {}",
        lhs.join(", "),
        rhs.join(", "),
        causes.join(", "),
        letters.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_are_unique_and_name_their_collection() {
        for c in Collection::ALL {
            assert_eq!(collection_of(letter(c)), Some(c), "{c:?}");
            assert!(letter(c).is_ascii_lowercase(), "{c:?}");
        }
        assert_eq!(collection_of(b'z'), None);
    }

    /// Each kind's letter names it back, is upper case (so no
    /// collection's), and is none of the budgets' sums.
    #[test]
    fn kind_letters_are_unique_and_name_their_kind() {
        for k in (0..KINDS_MAX).filter_map(Kind::at) {
            let l = kind_letter(k);
            assert_eq!(kind_of(l), Some(k), "{k}");
            assert!(l.is_ascii_uppercase(), "{k}");
        }
        for budget in [
            Collection::Streams,
            Collection::Queues,
            Collection::Schedules,
        ] {
            assert_eq!(
                kind_of(letter(budget).to_ascii_uppercase()),
                None,
                "{budget:?}"
            );
        }
        assert_eq!(kind_of(b'a'), None);
    }

    /// Every cause a function announces has one letter, which names it
    /// back, and the library's header defines it under its name.
    #[test]
    fn cause_letters_are_unique_and_name_their_cause() {
        let mut letters = std::collections::BTreeSet::new();
        for (cause, l, name) in CAUSES {
            assert!(letters.insert(l), "{name}: letter {} twice", l as char);
            assert_eq!(cause_of(l), Some(cause), "{name}");
        }
        assert_eq!(cause_of(b'z'), None);
        assert!(
            event_letters_lua()
                .ends_with("local EXPIRED_, REVOKED_, CASCADED_, RELEASED_, CONSUMED_ = 'e', 'r', 'c', 'x', 'u'"),
            "{}",
            event_letters_lua()
        );
    }

    /// Every scope the library can answer has one code, and the code
    /// names it back: each collection's four scopes and each mechanism
    /// scope.
    #[test]
    fn scope_codes_are_unique_both_ways() {
        let mut scopes: Vec<Scope> = MECHANISM_SCOPES.iter().map(|&(_, s)| s).collect();
        for c in Collection::ALL {
            scopes.extend([
                Scope::Tenant(c),
                Scope::Parent(c),
                Scope::Collection(c),
                Scope::Holder(c),
            ]);
        }
        for k in (0..KINDS_MAX).filter_map(Kind::at) {
            scopes.extend([
                Scope::KindTenant(k),
                Scope::KindParent(k),
                Scope::KindCeiling(k),
            ]);
        }
        let mut codes = std::collections::BTreeSet::new();
        for scope in scopes {
            let code = code_of(scope).unwrap_or_else(|| panic!("{scope:?} has no code"));
            assert!(codes.insert(code), "{scope:?}: code {code} twice");
            assert_eq!(scope_of(code), Some(scope), "{code}");
        }
        for code in [0, -1, 12, 99, 150, 500, 1000, 1099, 1116, 1400] {
            assert_eq!(scope_of(code), None, "{code}");
        }
        // Scopes only a process counts have no code.
        assert_eq!(code_of(Scope::Tenants), None);
    }

    /// The header names every code it defines once, as the library
    /// reads it.
    #[test]
    fn the_header_defines_every_scope_by_name() {
        let header = scopes_lua();
        assert!(header.contains(&format!(
            "l = {}",
            code_of(Scope::Tenant(Collection::Leases)).unwrap()
        )));
        assert!(
            header.contains("local CEILING_SCOPE = {l = 300, "),
            "{header}"
        );
        assert!(
            header.contains("local S_ENTRIES, S_CONSUMERS, "),
            "{header}"
        );
        assert!(header.ends_with("10, 11"), "{header}");
    }
}
