//! Record kinds a relay declares: a kind's name, its time rule and its
//! limits, as [`StoreConfig::kinds`](crate::StoreConfig::kinds) lists them
//! (ADR 0080).
//!
//! A declared record hangs from a lease, is named within it by a caller's
//! name, lives for a TTL of its kind's range and goes with its lease. The
//! relay's own records (a TURN allocation's permissions and channel
//! bindings, a lobby's members) get their own limits and their own removal
//! events, where presence records with prefixed names shared one budget.

use crate::base::collection::{Kind, KINDS_MAX};
use crate::base::error::{Error, Result};
use crate::contract::settings::settings;
use std::time::Duration;

settings! {
/// A record kind, as a relay declares it in its store's configuration.
///
/// Built from [`RecordKind::new`] and setters, one per field:
///
/// ```
/// use relaystore::{RecordKind, StoreConfig};
/// use std::time::Duration;
///
/// let permission = RecordKind::new("permission")
///     .ttl_max(Duration::from_secs(300))
///     .per_lease_max(32);
/// let config = StoreConfig::default().declare(permission);
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordKind {
    /// The kind's name: non-empty, at most
    /// [`KIND_NAME_BYTES_MAX`] bytes, unique among a store's kinds.
    pub name: String,
    /// Shortest TTL a record of the kind takes; at least the store's
    /// `ttl_min`.
    pub ttl_min: Duration,
    /// Longest TTL a record of the kind takes; at most the store's
    /// `ttl_max`.
    pub ttl_max: Duration,
    /// Most records of the kind one lease holds.
    pub per_lease_max: usize,
    /// Most records of the kind one tenant holds.
    pub per_tenant_max: u64,
    /// Most records of the kind the store holds.
    pub max: u64,
}
}

/// The longest name a kind may have, in bytes.
pub const KIND_NAME_BYTES_MAX: usize = 32;

impl RecordKind {
    /// A kind named `name` with the defaults: TTLs from 100 ms to one
    /// hour, 64 records per lease, 100,000 per tenant, 1,000,000 in the
    /// store.
    pub fn new(name: impl Into<String>) -> Self {
        RecordKind {
            name: name.into(),
            ttl_min: Duration::from_millis(100),
            ttl_max: Duration::from_secs(60 * 60),
            per_lease_max: 64,
            per_tenant_max: 100_000,
            max: 1_000_000,
        }
    }
}

/// Checks a store's kinds against each other and against the store's TTL
/// range: [`Error::InvalidConfig`] naming the field and the kind.
pub(crate) fn validate(kinds: &[RecordKind], ttl_min: Duration, ttl_max: Duration) -> Result<()> {
    let invalid = |field, rule, kind: &RecordKind, values: String| {
        Err(Error::InvalidConfig {
            field,
            rule,
            values: format!("kind {:?}: {values}", kind.name),
        })
    };
    if kinds.len() > KINDS_MAX {
        return Err(Error::InvalidConfig {
            field: "kinds",
            rule: "at most 16 kinds (KINDS_MAX)",
            values: format!("{} kinds", kinds.len()),
        });
    }
    for (i, kind) in kinds.iter().enumerate() {
        if kind.name.is_empty() || kind.name.len() > KIND_NAME_BYTES_MAX {
            return invalid(
                "kinds.name",
                "must be 1 to 32 bytes (KIND_NAME_BYTES_MAX)",
                kind,
                format!("{} bytes", kind.name.len()),
            );
        }
        if kinds[..i].iter().any(|k| k.name == kind.name) {
            return invalid(
                "kinds.name",
                "must be unique",
                kind,
                "declared twice".into(),
            );
        }
        let ttls = format!("ttl_min = {:?}, ttl_max = {:?}", kind.ttl_min, kind.ttl_max);
        if kind.ttl_min < ttl_min || kind.ttl_max > ttl_max || kind.ttl_min > kind.ttl_max {
            return invalid(
                "kinds.ttl_max",
                "must be ordered and within the store's ttl_min..=ttl_max",
                kind,
                ttls,
            );
        }
        for (field, value) in [
            ("kinds.per_lease_max", kind.per_lease_max as u64),
            ("kinds.per_tenant_max", kind.per_tenant_max),
            ("kinds.max", kind.max),
        ] {
            if value == 0 {
                return invalid(field, "must be positive", kind, format!("{field} = 0"));
            }
        }
    }
    let total = kinds.iter().fold(0u64, |n, k| n.saturating_add(k.max));
    if total > crate::base::ids::SLOTS_MAX {
        return Err(Error::InvalidConfig {
            field: "kinds.max",
            rule:
                "the kinds' max together must be at most 2^28 (268,435,456): one table keeps them",
            values: format!("{total} together"),
        });
    }
    Ok(())
}

/// The kind named `name` among `kinds`.
pub(crate) fn find(kinds: &[RecordKind], name: &str) -> Result<Kind> {
    kinds
        .iter()
        .position(|k| k.name == name)
        .and_then(Kind::at)
        .ok_or(Error::NotFound)
}

/// The declaration of `kind` among `kinds`; a kind the store did not
/// declare is [`Error::InvalidArgument`].
pub(crate) fn declared(kinds: &[RecordKind], kind: Kind) -> Result<&RecordKind> {
    kinds.get(kind.index()).ok_or(Error::InvalidArgument {
        reason: "the kind is not one the store declared",
    })
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    const TTL: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(86_400));

    fn field_of(kinds: &[RecordKind]) -> Option<&'static str> {
        match validate(kinds, TTL.0, TTL.1) {
            Ok(()) => None,
            Err(Error::InvalidConfig { field, .. }) => Some(field),
            Err(e) => panic!("{e:?}"),
        }
    }

    /// Each rule refuses with its field named, and a kind within every
    /// rule passes.
    #[test]
    fn each_rule_on_a_kind_names_its_field() {
        let ok = RecordKind::new("permission");
        assert_eq!(field_of(std::slice::from_ref(&ok)), None);
        let cases: [(Vec<RecordKind>, &str); 8] = [
            (vec![RecordKind::new("")], "kinds.name"),
            (vec![RecordKind::new("k".repeat(33))], "kinds.name"),
            (vec![ok.clone(), ok.clone()], "kinds.name"),
            (
                vec![ok.clone().ttl_max(Duration::from_secs(86_401))],
                "kinds.ttl_max",
            ),
            (
                vec![ok
                    .clone()
                    .ttl_min(Duration::from_secs(2))
                    .ttl_max(Duration::from_secs(1))],
                "kinds.ttl_max",
            ),
            (vec![ok.clone().per_lease_max(0)], "kinds.per_lease_max"),
            (vec![ok.clone().per_tenant_max(0)], "kinds.per_tenant_max"),
            (vec![ok.clone().max(0)], "kinds.max"),
        ];
        for (kinds, field) in cases {
            assert_eq!(field_of(&kinds), Some(field), "{kinds:?}");
        }
        let many: Vec<_> = (0..=KINDS_MAX)
            .map(|i| RecordKind::new(format!("k{i}")))
            .collect();
        assert_eq!(field_of(&many[..KINDS_MAX]), None);
        assert_eq!(field_of(&many), Some("kinds"));
        let huge = [ok.clone().max(1 << 28), RecordKind::new("other").max(1)];
        assert_eq!(field_of(&huge), Some("kinds.max"));
    }

    #[test]
    fn a_kind_is_found_by_its_name_and_its_place() {
        let kinds = [RecordKind::new("permission"), RecordKind::new("channel")];
        let channel = find(&kinds, "channel").unwrap();
        assert_eq!(channel.index(), 1);
        assert_eq!(declared(&kinds, channel).unwrap().name, "channel");
        assert_eq!(find(&kinds, "nope"), Err(Error::NotFound));
        assert!(matches!(
            declared(&kinds, Kind::at(2).unwrap()),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
