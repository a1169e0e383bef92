//! The store's collections, named once: what a removal event names, what a
//! capacity refusal's scope names, and what every per-collection table
//! (limits, metric labels, Redis letters) is indexed by.

/// A collection of the store: what a removal event names, and what a
/// capacity refusal's [`Scope`](crate::Scope) names.
///
/// Join attempts are one table with two bounds. [`Attempts`](Self::Attempts)
/// names pending or bound attempts (bounded by `attempts_max`, per tenant
/// and per listing); [`Replay`](Self::Replay) names every attempt record,
/// consumed tokens remembered for replay rejection included (bounded by
/// `replay_max`), which is the table's own ceiling.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Collection {
    /// Leases.
    Leases,
    /// Published listings.
    Listings,
    /// Presence records.
    Presence,
    /// Join attempts (pending or bound).
    Attempts,
    /// Attempt records including the replay memory of consumed tokens (as
    /// an event: a consumed token's memory left).
    Replay,
    /// Idempotency records.
    Idempotency,
    /// Revocation tombstones.
    Tombstones,
    /// Named locks.
    Locks,
    /// Streams (their removal: deleted, or cascaded with their lease).
    Streams,
    /// Job queues (their removal: deleted, with every job in them).
    Queues,
    /// Interval schedules (their removal: unscheduled).
    Schedules,
    /// Records of the kinds a relay declared ([`Kind`]), every kind
    /// together: each is bounded by its own kind's limits.
    Records,
}

impl Collection {
    /// Every collection, in declaration order: what per-collection data is
    /// indexed by (`Collection as usize`).
    pub const ALL: [Collection; 12] = [
        Collection::Leases,
        Collection::Listings,
        Collection::Presence,
        Collection::Attempts,
        Collection::Replay,
        Collection::Idempotency,
        Collection::Tombstones,
        Collection::Locks,
        Collection::Streams,
        Collection::Queues,
        Collection::Schedules,
        Collection::Records,
    ];

    /// The collection's name, in lower case (`"leases"`, `"presence"`):
    /// what [`Display`](std::fmt::Display) prints, [`FromStr`](std::str::FromStr)
    /// reads, a refusal's message and the metrics' `collection` label show.
    pub const fn name(self) -> &'static str {
        ABOUT[self as usize].name
    }

    /// The collection's letter, unique among the collections: how an
    /// engine that names records by short keys writes it (the Redis
    /// engine's keys, its room under the store-wide ceilings, its events
    /// and its scope codes).
    #[cfg(feature = "redis")]
    pub(crate) const fn letter(self) -> u8 {
        ABOUT[self as usize].letter
    }
}

/// Text that names no value of its type: what the `FromStr` of a
/// name-like value ([`Cause`](crate::events::Cause),
/// [`Collection`]) refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("not the name of a {of}")]
pub struct ParseNameError {
    /// What the text was read as (`"cause"`, `"collection"`).
    pub of: &'static str,
}

impl std::fmt::Display for Collection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads a collection's [`name`](Collection::name).
impl std::str::FromStr for Collection {
    type Err = ParseNameError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Collection::ALL
            .into_iter()
            .find(|c| c.name() == text)
            .ok_or(ParseNameError { of: "collection" })
    }
}

/// What is said of a collection once, for every engine.
struct About {
    name: &'static str,
    letter: u8,
}

/// Each collection's [`About`], in [`Collection::ALL`]'s order.
const ABOUT: [About; Collection::ALL.len()] = [
    About {
        name: "leases",
        letter: b'l',
    },
    About {
        name: "listings",
        letter: b'p',
    },
    About {
        name: "presence",
        letter: b'm',
    },
    About {
        name: "attempts",
        letter: b'a',
    },
    About {
        name: "replay",
        letter: b'r',
    },
    About {
        name: "idempotency",
        letter: b'i',
    },
    About {
        name: "tombstones",
        letter: b't',
    },
    About {
        name: "locks",
        letter: b'k',
    },
    About {
        name: "streams",
        letter: b's',
    },
    About {
        name: "queues",
        letter: b'q',
    },
    About {
        name: "schedules",
        letter: b'h',
    },
    About {
        name: "records",
        letter: b'd',
    },
];

// Letters are unique.
const _: () = {
    let mut i = 0;
    while i < ABOUT.len() {
        let mut j = i + 1;
        while j < ABOUT.len() {
            assert!(ABOUT[i].letter != ABOUT[j].letter);
            j += 1;
        }
        i += 1;
    }
};

// `ALL[i] as usize == i`: per-collection arrays are indexed by the enum.
const _: () = {
    let mut i = 0;
    while i < Collection::ALL.len() {
        assert!(Collection::ALL[i] as usize == i);
        i += 1;
    }
};

/// The most record kinds one store declares: the in-memory store keeps a
/// kind's number in four bits of a slot key that a slot's index never
/// uses (a table holds at most 2^28 records).
pub const KINDS_MAX: usize = 16;

/// A record kind a relay declared, by its place in
/// [`StoreConfig::kinds`](crate::StoreConfig::kinds) (from 0): what a
/// declared record's operations, removal events and refusals name it by.
/// [`Store::kind`](crate::Store::kind) finds one by its name.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind(u8);

impl Kind {
    /// The kind declared `index`-th; `None` at [`KINDS_MAX`] and past it.
    /// A store with fewer kinds refuses a kind it did not declare.
    pub const fn at(index: usize) -> Option<Kind> {
        if index < KINDS_MAX {
            Some(Kind(index as u8))
        } else {
            None
        }
    }

    /// Its place among the declared kinds.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kind {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is in the enum's order: each collection's name is its
    /// variant's, in lower case.
    #[test]
    fn each_collection_is_described_by_its_own_row() {
        for c in Collection::ALL {
            assert_eq!(c.name(), format!("{c:?}").to_lowercase());
        }
    }
}
