//! The vocabulary of removal events, the same on every engine: which record
//! went ([`RecordId`], in which [`Collection`]), why ([`Cause`]), and what a
//! subscriber reads ([`Received`], or a [`RecvError`]).

pub use crate::base::collection::Collection;
use crate::base::collection::Kind;
use crate::base::collection::ParseNameError;
use crate::base::ids::{AttemptId, LeaseId, TenantId};
use crate::base::name::Holder;
use std::fmt;
use std::sync::Arc;

/// Why a record was removed.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// Its deadline passed.
    Expired,
    /// It was explicitly revoked.
    Revoked,
    /// Its parent was revoked or removed.
    Cascaded,
    /// Its owner removed it (unpublish, leave, cancel, release).
    Released,
    /// Its one-time token was consumed.
    Consumed,
    /// The store drained.
    Drained,
}

impl Cause {
    /// Every cause, in declaration order.
    pub const ALL: [Cause; 6] = [
        Cause::Expired,
        Cause::Revoked,
        Cause::Cascaded,
        Cause::Released,
        Cause::Consumed,
        Cause::Drained,
    ];

    /// The cause's name, in lower case (`"expired"`, `"cascaded"`): what
    /// [`Display`](fmt::Display) prints, [`FromStr`](std::str::FromStr)
    /// reads and the metrics' `cause` label shows.
    pub const fn name(self) -> &'static str {
        match self {
            Cause::Expired => "expired",
            Cause::Revoked => "revoked",
            Cause::Cascaded => "cascaded",
            Cause::Released => "released",
            Cause::Consumed => "consumed",
            Cause::Drained => "drained",
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads a cause's [`name`](Cause::name).
impl std::str::FromStr for Cause {
    type Err = ParseNameError;

    fn from_str(text: &str) -> Result<Self, ParseNameError> {
        Cause::ALL
            .into_iter()
            .find(|c| c.name() == text)
            .ok_or(ParseNameError { of: "cause" })
    }
}

/// The id of a removed record.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RecordId {
    /// A lease or its tombstone.
    Lease(LeaseId),
    /// A listing, by key.
    Listing(Arc<str>),
    /// A presence record, by member.
    Member(Arc<str>),
    /// A join attempt or its replay memory.
    Attempt(AttemptId),
    /// An idempotency record or a lock, by key or name.
    Key(Arc<str>),
    /// A stream, by name.
    Stream(Arc<str>),
    /// A job queue, by name.
    Queue(Arc<str>),
    /// A schedule, by name.
    Schedule(Arc<str>),
    /// A record of a declared kind, by its kind, its lease and its name.
    Record {
        /// Its kind.
        kind: Kind,
        /// The lease it hung from.
        lease: LeaseId,
        /// Its name.
        name: Arc<str>,
    },
}

/// The record as an operator reads it: its collection's word and its
/// id (`lease 3f2a…/17`, `member alice`, `record 10.0.0.1 of kind 0
/// under lease 3f2a…/17`).
impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordId::Lease(id) => write!(f, "lease {id}"),
            RecordId::Listing(key) => write!(f, "listing {key}"),
            RecordId::Member(member) => write!(f, "member {member}"),
            RecordId::Attempt(id) => write!(f, "attempt {id}"),
            RecordId::Key(key) => write!(f, "key {key}"),
            RecordId::Stream(name) => write!(f, "stream {name}"),
            RecordId::Queue(name) => write!(f, "queue {name}"),
            RecordId::Schedule(name) => write!(f, "schedule {name}"),
            RecordId::Record { kind, lease, name } => {
                write!(f, "record {name} of {kind} under lease {lease}")
            }
        }
    }
}

/// One removal.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Where the record was.
    pub collection: Collection,
    /// Whose it was.
    pub tenant: TenantId,
    /// Which it was.
    pub id: RecordId,
    /// Why it went.
    pub cause: Cause,
    /// Who held it: a lease's holder, a lock's owner; `None` for the other
    /// collections.
    pub holder: Option<Holder>,
    /// For a removal a cascade made (`cause` is `Cascaded`): the removal
    /// that started the cascade, when the engine knows it (a revoked or
    /// expired lease for its listings, presence, locks, streams and the
    /// listings' attempts; an unpublished listing for its attempts). `None`
    /// for a record removed for its own sake, and for a child found orphaned
    /// after its parent went unannounced.
    pub root: Option<Root>,
    /// The removal's number, so a subscriber can tell where it stands and,
    /// after a [`Received::Lagged`], which numbers it missed. On the
    /// in-memory store one count runs over every tenant, and a subscriber
    /// is handed the numbers rising. On Redis each tenant's removals are
    /// numbered one by one in the order its slot ran them; a handle's
    /// subscribers get the removals of its own calls rising, when each
    /// call returns, and other instances' as Pub/Sub brings them, so the
    /// two can interleave out of order.
    pub seq: u64,
}

impl Event {
    /// The cause at the root of this removal: the root's for a cascade
    /// whose root is known, this removal's own otherwise.
    pub fn root_cause(&self) -> Cause {
        self.root.as_ref().map_or(self.cause, |root| root.cause)
    }
}

/// One line for a log: the tenant, the record, why it went, who held
/// it and, for a cascade, what started it (`tenant-7: listing lobby
/// cascaded, from lease 3f2a…/17 expired (#42)`).
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} {}", self.tenant, self.id, self.cause)?;
        if let Some(holder) = &self.holder {
            write!(f, ", held by {holder}")?;
        }
        if let Some(root) = &self.root {
            write!(f, ", from {root}")?;
        }
        write!(f, " (#{})", self.seq)
    }
}

/// The removal that started a cascade.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    /// Where the record was.
    pub collection: Collection,
    /// Which it was.
    pub id: RecordId,
    /// Why it went (never `Cascaded`).
    pub cause: Cause,
}

impl fmt::Display for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.id, self.cause)
    }
}

/// What a subscriber reads.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// The next event.
    Event(Event),
    /// The subscriber fell behind and `missed` events were dropped. A
    /// subscriber that keeps a view (a lobby list, say) reads the tenants
    /// in `gaps` again (`list_listings`, `list_presence`), or every tenant
    /// when `every_tenant` says the gaps were too many to list.
    Lagged {
        /// How many events were dropped since the last read.
        missed: u64,
        /// Per tenant, the numbers (`Event::seq`) the missed events lie
        /// within; at most [`Gap::LISTED_MAX`] tenants.
        gaps: Vec<Gap>,
        /// Events of more tenants than `gaps` lists were missed.
        every_tenant: bool,
    },
}

/// An event as [`Event`]'s `Display` prints it; a lag report as how many
/// events were missed, and whose.
impl fmt::Display for Received {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Received::Event(event) => event.fmt(f),
            Received::Lagged {
                missed,
                gaps,
                every_tenant,
            } => {
                write!(f, "lagged: {missed} events missed")?;
                if *every_tenant {
                    return f.write_str(", of more tenants than listed: read every tenant again");
                }
                for (i, gap) in gaps.iter().enumerate() {
                    let sep = if i == 0 { ", of " } else { ", " };
                    write!(f, "{sep}{} (#{}..=#{})", gap.tenant, gap.from, gap.to)?;
                }
                Ok(())
            }
        }
    }
}

/// Where a subscriber missed events of one tenant: the missed events'
/// numbers lie in `from..=to` (on the in-memory store, whose count runs
/// over every tenant, numbers in between may be other tenants').
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Gap {
    /// Whose events were missed.
    pub tenant: TenantId,
    /// The lowest number missed.
    pub from: u64,
    /// The highest number missed.
    pub to: u64,
}

impl Gap {
    /// The most tenants one `Lagged` lists.
    pub const LISTED_MAX: usize = 16;
}

/// A subscriber's missed events since its last read, as `Lagged` tells
/// them.
#[derive(Default)]
pub(crate) struct Lag {
    missed: u64,
    gaps: Vec<Gap>,
    every_tenant: bool,
}

impl Lag {
    /// `count` events of `tenant`, numbered within `from..=to`, missed.
    pub(crate) fn note(&mut self, tenant: TenantId, from: u64, to: u64, count: u64) {
        self.missed += count;
        if let Some(gap) = self.gaps.iter_mut().find(|g| g.tenant == tenant) {
            gap.from = gap.from.min(from);
            gap.to = gap.to.max(to);
        } else if self.gaps.len() < Gap::LISTED_MAX {
            self.gaps.push(Gap { tenant, from, to });
        } else {
            self.every_tenant = true;
        }
    }

    /// The report of what was missed, if anything was; then nothing is.
    pub(crate) fn take(&mut self) -> Option<Received> {
        if self.missed == 0 {
            return None;
        }
        let lag = std::mem::take(self);
        Some(Received::Lagged {
            missed: lag.missed,
            gaps: lag.gaps,
            every_tenant: lag.every_tenant,
        })
    }
}

/// Why a wait for an event ended without one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum RecvError {
    /// The store is gone and every buffered event has been read.
    #[error("the store is gone")]
    Closed,
    /// Nothing arrived within the timeout.
    #[error("no event within the timeout")]
    Timeout,
}
