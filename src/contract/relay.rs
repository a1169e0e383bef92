//! What the relay records' operations return, the same on every engine:
//! leases, listings, presence, join attempts and named locks, as values
//! with time as time remaining.

use crate::base::attrs::Attrs;
use crate::base::collection::Kind;
use crate::base::ids::{AttemptId, JoinToken, LeaseId};
use crate::base::name::{Holder, Name};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What [`Store::begin_join`](crate::Store::begin_join) returns.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinTicket {
    /// The attempt.
    pub attempt: AttemptId,
    /// Its one-time token; hand it to the client.
    pub token: JoinToken,
    /// Time left before the attempt (and the token) stop being valid.
    pub remaining: Duration,
    /// The same on the wall clock at issue time, for reporting.
    pub expires_at: SystemTime,
}

/// Where a join attempt stands ([`AttemptInfo::state`]).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptState {
    /// Begun; no endpoint bound yet.
    Pending,
    /// Bound to the endpoint observed for its client; not yet consumed.
    Bound(SocketAddr),
    /// Consumed: the client was admitted from this endpoint. The record is
    /// the token's replay memory now.
    Consumed(SocketAddr),
}

/// What [`Store::get_attempt`](crate::Store::get_attempt) returns: a join
/// attempt as an operator's page shows it.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptInfo {
    /// The attempt.
    pub attempt: AttemptId,
    /// The listing it joins.
    pub listing: Arc<str>,
    /// The client that began it.
    pub client: Arc<str>,
    /// Pending, bound or consumed.
    pub state: AttemptState,
    /// Its version (every step raises it).
    pub version: u64,
    /// Time left: before the attempt and its token stop being valid
    /// (pending or bound), or before the replay memory of its consumed
    /// token is forgotten (consumed: the token's deadline plus
    /// `replay_grace`).
    pub remaining: Duration,
}

/// What [`Store::bind_endpoint`](crate::Store::bind_endpoint) returns.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    /// The attempt.
    pub attempt: AttemptId,
    /// The address it is bound to.
    pub addr: SocketAddr,
    /// The attempt's version after binding.
    pub version: u64,
}

/// What [`Store::consume`](crate::Store::consume) returns: the admission the token authorised.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// The attempt.
    pub attempt: AttemptId,
    /// The client that began it.
    pub client: Arc<str>,
    /// The listing it joined.
    pub listing: Arc<str>,
    /// The endpoint it was bound to.
    pub addr: SocketAddr,
}

/// What [`Store::grant`](crate::Store::grant) returns.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseGrant {
    /// The new lease.
    pub id: LeaseId,
    /// Its fencing token: strictly greater than every earlier grant's.
    pub fence: u64,
    /// Its version.
    pub version: u64,
    /// Time left before it expires, measured when it was granted.
    pub remaining: Duration,
    /// Its deadline on the wall clock at grant time, for reporting.
    pub expires_at: SystemTime,
}

/// What [`Store::get_lease`](crate::Store::get_lease) returns.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    /// The lease.
    pub id: LeaseId,
    /// Who holds it.
    pub holder: Holder,
    /// Its fencing token.
    pub fence: u64,
    /// Its version.
    pub version: u64,
    /// Time left before it expires.
    pub remaining: Duration,
}

/// A public endpoint observed for a lease holder.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointSeen {
    /// The observed address.
    pub addr: SocketAddr,
    /// How long ago it was last observed.
    pub age: Duration,
}

/// A visible listing.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingInfo {
    /// Its key (a [`Name`]: a key of up to 23 bytes is copied out of the
    /// record, with no allocation).
    pub key: Name,
    /// The lease it lives under.
    pub lease: LeaseId,
    /// Its attributes (an [`Attrs`]: up to 22 bytes are copied out of
    /// the record, with no allocation).
    pub attrs: Attrs,
    /// Its version; [`Store::update_listing`](crate::Store::update_listing) takes it.
    pub version: u64,
    /// Time left before it expires, measured when the call read it: a
    /// listing lives as long as its lease, so this is the lease's.
    pub remaining: Duration,
}

/// Where a listing of keys stopped; pass it back for the next page. Its
/// text form (`Display`, `From<&str>`) can travel to a client and back:
/// on Redis it is the page's last key, in memory the page's last place
/// (a number), and paging resumes after it. A cursor is for the engine
/// and the `list` call that gave it: the in-memory engine refuses one
/// that does not name a place with [`Error::InvalidArgument`](crate::Error::InvalidArgument).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Cursor(pub(crate) Arc<str>);

impl Cursor {
    /// The cursor's text form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One page of a `list` call.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The visible items of this page, in the engine's order for the
    /// scan (key order on Redis, the records' places in memory).
    pub items: Vec<T>,
    /// `Some` if there may be more; pass it to the next call.
    pub next: Option<Cursor>,
}

/// A visible presence record.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresenceInfo {
    /// The member (a [`Name`], as a listing's key).
    pub member: Name,
    /// Its attributes (an [`Attrs`], as a listing's).
    pub attrs: Attrs,
    /// The lease it is attached to, if any.
    pub lease: Option<LeaseId>,
    /// Its version.
    pub version: u64,
    /// Time left before it expires unless refreshed.
    pub remaining: Duration,
}

/// A visible record of a declared kind.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordInfo {
    /// Its kind.
    pub kind: Kind,
    /// The lease it hangs from.
    pub lease: LeaseId,
    /// Its name within its lease and kind.
    pub name: Name,
    /// Its attributes.
    pub attrs: Attrs,
    /// Its version.
    pub version: u64,
    /// Time left before it expires unless renewed.
    pub remaining: Duration,
}

/// A visible lock's state.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    /// Who holds it.
    pub holder: Holder,
    /// Its fencing token.
    pub fence: u64,
    /// Its version.
    pub version: u64,
    /// Time left before it lapses.
    pub remaining: Duration,
}

/// What a renewal or a presence heartbeat returns: the record's new version
/// and the time it has left, measured at the renewal. Engine-neutral: no
/// reading of any process's clock (see `docs/adr/0019-time-in-results.md`).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Renewal {
    /// The record's version after the renewal.
    pub version: u64,
    /// Time left before the record expires unless renewed again.
    pub remaining: Duration,
}
