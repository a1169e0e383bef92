//! Removal events on Redis.
//!
//! Every function that removes a record reports it (`finish` in
//! `lua/shared/99_finish.lua`): it numbers the tenant's removals, publishes them on
//! the store's Pub/Sub channel for every instance, and returns them with
//! its reply. The handle that made the call delivers them to its own
//! subscribers from the reply, before the call returns, as the in-memory
//! store does (or from the channel, if its copy came first or the call was
//! dropped before its reply: `own_removals.rs`); every other handle with
//! subscribers gets them from its channel listener. Both deliver into the same bounded hub the in-memory
//! store uses, so a subscription is a [`Subscription`] either way.
//!
//! Pub/Sub delivers at most once: a listener that was disconnected, or
//! that Redis cut off for reading too slowly, misses messages. Each
//! tenant's removals are numbered in the order its slot ran them, so the
//! listener counts a gap in a tenant's numbers and reports it to every
//! subscriber as [`Received::Lagged`](crate::contract::events::Received::Lagged).

use super::own_removals::{OwnRemovals, Via};
use super::{Inner, RedisEngine, RedisTarget};
use crate::base::error::{Error, Result};
use crate::base::ids::{AttemptId, LeaseId, TenantId};
use crate::base::name::Holder;
use crate::contract::events::{Collection, Event, RecordId, Root};
use crate::mem::events::{EventHub, Subscription};
use crate::mem::wake::WakeHub;
use redis::Value;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// What a per-tenant call reported besides its reply: the removals it
/// made (encoded), and a deadline the store's due index must lower the
/// tenant to, if any.
#[derive(Default)]
pub(super) struct Aftermath {
    events: Vec<Vec<u8>>,
    /// The tenant's number of the last of `events`.
    last: u64,
    pub(super) due: Option<u64>,
    /// Room under the store-wide ceilings the call needs (`room.rs`).
    pub(super) needs: Vec<String>,
    /// Room the call freed, or took and did not use: to give back.
    pub(super) freed: Vec<Vec<u8>>,
}

/// Splits a per-tenant function's answer (`{reply}` or `{reply, events,
/// last, due, needs, freed}`, as `finish` in `lua/shared/99_finish.lua` makes it) into
/// the reply's values and the rest.
pub(super) fn split(answer: Vec<Value>) -> Result<(Vec<Value>, Aftermath)> {
    let mut parts = answer.into_iter();
    let reply = match parts.next() {
        Some(Value::Array(values)) => values,
        other => return Err(malformed(&format!("the reply is {other:?}"))),
    };
    let mut after = Aftermath::default();
    match parts.next() {
        None => return Ok((reply, after)),
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::BulkString(bytes) => after.events.push(bytes),
                    other => return Err(malformed(&format!("an event is {other:?}"))),
                }
            }
        }
        Some(other) => return Err(malformed(&format!("the events are {other:?}"))),
    }
    after.last = match parts.next() {
        Some(Value::Int(last)) => u64::try_from(last).unwrap_or(0),
        other => return Err(malformed(&format!("the last event's number is {other:?}"))),
    };
    after.due = match parts.next() {
        Some(Value::Int(d)) => u64::try_from(d).ok(),
        other => return Err(malformed(&format!("the due deadline is {other:?}"))),
    };
    let needs = strings(parts.next(), "the room needed")?;
    after.needs = needs
        .into_iter()
        .map(|n| String::from_utf8(n).map_err(|_| malformed("a room need is not UTF-8")))
        .collect::<Result<_>>()?;
    after.freed = strings(parts.next(), "the room freed")?;
    Ok((reply, after))
}

/// An array of strings (a missing one is empty).
fn strings(part: Option<Value>, what: &str) -> Result<Vec<Vec<u8>>> {
    match part {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::BulkString(bytes) => Ok(bytes),
                other => Err(malformed(&format!("{what} holds {other:?}"))),
            })
            .collect(),
        Some(other) => Err(malformed(&format!("{what} is {other:?}"))),
    }
}

fn malformed(what: &str) -> Error {
    Error::backend(format!("malformed removal events: {what}"), true)
}

/// One encoded removal (collection letter, cause letter, root, holder,
/// id: `leave_index` in `lua/shared/40_events.lua`) as an event of `tenant`, with
/// ids of `incarnation`; `None` if it is not one.
fn decode(tenant: TenantId, incarnation: u64, seq: u64, raw: &[u8]) -> Option<Event> {
    let (&c, rest) = raw.split_first()?;
    let (&why, rest) = rest.split_first()?;
    let collection = super::codes::collection_of(c)?;
    let cause = super::codes::cause_of(why)?;
    let (root, rest) = match rest.split_first()? {
        (b'-', rest) => (None, rest),
        (&root_cause, rest) => {
            let (&root_collection, rest) = rest.split_first()?;
            let (id, rest) = counted(rest)?;
            let root_collection = super::codes::collection_of(root_collection)?;
            let root = Root {
                collection: root_collection,
                id: record_id(root_collection, incarnation, id)?,
                cause: super::codes::cause_of(root_cause)?,
            };
            (Some(root), rest)
        }
    };
    let (holder, id) = match rest.split_first()? {
        (b'-', rest) => (None, rest),
        (b'h', rest) => {
            let (name, rest) = counted(rest)?;
            (Some(Holder::new(name)), rest)
        }
        _ => return None,
    };
    let id = record_id(collection, incarnation, std::str::from_utf8(id).ok()?)?;
    Some(Event {
        collection,
        tenant,
        id,
        cause,
        holder,
        root,
        seq,
    })
}

/// A `<length>:<text>` field and what follows it.
fn counted(raw: &[u8]) -> Option<(&str, &[u8])> {
    let colon = raw.iter().position(|&b| b == b':')?;
    let len: usize = std::str::from_utf8(&raw[..colon]).ok()?.parse().ok()?;
    let rest = &raw[colon + 1..];
    if rest.len() < len {
        return None;
    }
    let (text, rest) = rest.split_at(len);
    Some((std::str::from_utf8(text).ok()?, rest))
}

/// The id of a record of `collection` from its text in Redis.
fn record_id(collection: Collection, incarnation: u64, id: &str) -> Option<RecordId> {
    let seq = || id.parse::<u64>().ok();
    Some(match collection {
        Collection::Leases | Collection::Tombstones => {
            RecordId::Lease(LeaseId::new(incarnation, seq()?))
        }
        Collection::Listings => RecordId::Listing(Arc::from(id)),
        Collection::Presence => RecordId::Member(Arc::from(id)),
        Collection::Attempts | Collection::Replay => {
            RecordId::Attempt(AttemptId::new(incarnation, seq()?))
        }
        Collection::Locks | Collection::Idempotency => RecordId::Key(Arc::from(id)),
        Collection::Streams => RecordId::Stream(Arc::from(id)),
        Collection::Queues => RecordId::Queue(Arc::from(id)),
        Collection::Schedules => RecordId::Schedule(Arc::from(id)),
        // "<kind's letter>:<lease>:<name>" (`lua/shared/65_declared.lua`).
        Collection::Records => {
            let (kind, rest) = id.split_once(':')?;
            let (lease, name) = rest.split_once(':')?;
            let [letter] = kind.as_bytes() else {
                return None;
            };
            RecordId::Record {
                kind: super::codes::kind_of(*letter)?,
                lease: LeaseId::new(incarnation, lease.parse().ok()?),
                name: Arc::from(name),
            }
        }
    })
}

/// Hands one removal to a handle's subscribers; a stream's or a queue's
/// removal also wakes its followers or waiting workers on this handle,
/// who then find it gone.
fn announce(hub: &EventHub, wakes: &WakeHub, event: Event) {
    let channel = match &event.id {
        RecordId::Stream(name) => Some(crate::contract::names::stream_wake_channel(name)),
        RecordId::Queue(name) => Some(crate::contract::names::queue_wake_channel(name)),
        _ => None,
    };
    if let Some(channel) = channel {
        // Refused only once the handle is gone: nobody to wake then.
        let _ = wakes.notify(&(event.tenant, channel));
    }
    hub.emit_numbered(event);
}

impl RedisEngine {
    /// Hands the removals a call of this handle made to its subscribers,
    /// those whose channel copy did not come first (`own_removals.rs`).
    pub(super) fn deliver(&self, tenant: TenantId, incarnation: u64, after: &Aftermath) {
        let first = after.last.saturating_sub(after.events.len() as u64) + 1;
        let firsts = self
            .inner
            .own
            .firsts(tenant.0, first, after.events.len(), Via::Reply);
        for (i, (raw, seq)) in after.events.iter().zip(first..).enumerate() {
            let deliver = firsts.as_ref().is_none_or(|f| f[i]);
            match decode(tenant, incarnation, seq, raw) {
                Some(event) => {
                    // Counted by the handle whose call removed it, once.
                    let engine = crate::contract::metrics::EngineLabel::Redis;
                    crate::contract::metrics::removal(engine, event.collection, event.cause);
                    if deliver {
                        announce(&self.inner.hub, &self.inner.wakes, event);
                    }
                }
                None => tracing::warn!(?raw, "relaystore redis: an unreadable removal event"),
            }
        }
    }

    /// A new subscription to every removal event, on every instance.
    /// Refused with `CapacityExceeded` past `subscribers_max`; fails with
    /// `BackendUnavailable` if the channel cannot be listened to.
    pub async fn subscribe(&self) -> Result<Subscription> {
        self.subscribe_to(&Collection::ALL).await
    }

    /// A new subscription to the removal events of `collections` only.
    /// The first subscription of a handle starts its channel listener
    /// (one Pub/Sub connection) and returns once it listens, so every
    /// removal after it is seen. What a tenant revocation ends is announced
    /// as its epoch is buried, within a sweep (ADR 0071).
    pub async fn subscribe_to(&self, collections: &[Collection]) -> Result<Subscription> {
        let subscription = self.inner.hub.subscribe(collections)?;
        self.start_listener().await?;
        Ok(subscription)
    }

    /// Starts the channel listener (removal events and wakes) unless it
    /// runs; returns once it is subscribed.
    pub(super) async fn start_listener(&self) -> Result<()> {
        let mut listener = self.inner.listener.lock().await;
        if listener.as_ref().is_some_and(|task| !task.is_finished()) {
            return Ok(());
        }
        let channels = [
            format!("relaystore:{}:events", self.inner.namespace),
            wakes_channel(&self.inner.namespace),
        ];
        // Before it subscribes: every reply whose channel copy it will read
        // is then recorded for that copy to find.
        self.inner.own.set_listening(true);
        let stream = match connect(&self.inner.target, &channels, self.inner.connect_timeout).await
        {
            Ok(stream) => stream,
            Err(e) => {
                self.inner.own.set_listening(false);
                return Err(e);
            }
        };
        let task = Listener {
            inner: Arc::downgrade(&self.inner),
            hub: Arc::clone(&self.inner.hub),
            wakes: Arc::clone(&self.inner.wakes),
            origin: format!("{:x}", self.inner.origin),
            own: Arc::clone(&self.inner.own),
            target: self.inner.target.clone(),
            channels,
            timeout: self.inner.connect_timeout,
            last: HashMap::new(),
        };
        *listener = Some(tokio::spawn(task.run(stream)));
        Ok(())
    }
}

/// The store's wake channel.
pub(super) fn wakes_channel(namespace: &str) -> String {
    format!("relaystore:{namespace}:wakes")
}

/// A message of `parts`, each as `<length>:<bytes>` (as the functions
/// write removal messages).
pub(super) fn netstring_message(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in parts {
        out.extend_from_slice(part.len().to_string().as_bytes());
        out.push(b':');
        out.extend_from_slice(part);
    }
    out
}

/// A Pub/Sub connection subscribed to `channels`, on the server or on any
/// one node of the cluster (a cluster delivers every node's messages to a
/// subscriber on any node).
async fn connect(
    target: &RedisTarget,
    channels: &[String],
    timeout: Duration,
) -> Result<redis::aio::PubSubStream> {
    let urls: Vec<&str> = match target {
        RedisTarget::Standalone(url) => vec![url.as_str()],
        RedisTarget::Cluster(seeds) => seeds.iter().map(String::as_str).collect(),
    };
    let mut last = None;
    for url in urls {
        let attempt = async {
            let client = redis::Client::open(url)?;
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(channels).await?;
            Ok::<_, redis::RedisError>(pubsub.into_on_message())
        };
        match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Some(e.to_string()),
            Err(_) => last = Some(format!("no answer within {timeout:?}")),
        }
    }
    Err(Error::backend(
        Arc::from(format!(
            "cannot listen for removal events and wakes: {}",
            last.unwrap_or_default()
        )),
        false,
    ))
}

/// A handle's channel listener: delivers other instances' removals and
/// counts gaps, and wakes the handle's listeners for other instances'
/// notifies. Ends when the handle is gone.
struct Listener {
    inner: Weak<Inner>,
    hub: Arc<EventHub>,
    wakes: Arc<WakeHub>,
    origin: String,
    /// Which copy of this handle's own removals came first.
    own: Arc<OwnRemovals>,
    target: RedisTarget,
    /// The removal events' channel, then the wakes'.
    channels: [String; 2],
    timeout: Duration,
    /// The last removal number seen per tenant (16 bytes per tenant that
    /// removed anything since the listener started).
    last: HashMap<u64, u64>,
}

impl Listener {
    async fn run(mut self, mut stream: redis::aio::PubSubStream) {
        use futures_util::StreamExt;
        loop {
            while let Some(message) = stream.next().await {
                let Some(inner) = self.inner.upgrade() else {
                    return;
                };
                if message.get_channel_name() == self.channels[1] {
                    self.take_wake(message.get_payload_bytes());
                } else {
                    self.take(
                        message.get_payload_bytes(),
                        inner.incarnation.load(Ordering::Acquire),
                    );
                }
            }
            // Disconnected: try again until the handle is gone; removals
            // missed meanwhile show as gaps, and wakes missed meanwhile
            // are made up for by waking every listener once. Replies meanwhile
            // wait for no channel copy.
            self.own.set_listening(false);
            loop {
                if self.inner.strong_count() == 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                self.own.set_listening(true);
                if let Ok(s) = connect(&self.target, &self.channels, self.timeout).await {
                    stream = s;
                    self.wakes.wake_all();
                    break;
                }
                self.own.set_listening(false);
            }
        }
    }

    /// One published message: `origin, tenant, last, events…`, each part
    /// as `<length>:<bytes>`.
    fn take(&mut self, payload: &[u8], incarnation: u64) {
        let Some(parts) = netstrings(payload) else {
            tracing::warn!("relaystore redis: an unreadable removal message");
            return;
        };
        let [origin, tenant, last, events @ ..] = parts.as_slice() else {
            return;
        };
        let (Some(tenant), Some(last)) = (number(tenant), number(last)) else {
            return;
        };
        let first = last.saturating_sub(events.len() as u64) + 1;
        // A gap is what was missed. (Numbers below the last seen mean the
        // tenant's counter started again: Redis lost its data.)
        match self.last.insert(tenant, last) {
            Some(seen) if first > seen + 1 => {
                self.hub
                    .report_missed(TenantId(tenant), seen + 1, first - 1)
            }
            _ => {}
        }
        // This handle's own removals: those its reply did not deliver
        // first (its call may have been dropped).
        let firsts = (*origin == self.origin.as_bytes())
            .then(|| self.own.firsts(tenant, first, events.len(), Via::Channel))
            .flatten();
        for (i, (raw, seq)) in events.iter().zip(first..).enumerate() {
            if !firsts.as_ref().is_none_or(|f| f[i]) {
                continue;
            }
            if let Some(event) = decode(TenantId(tenant), incarnation, seq, raw) {
                announce(&self.hub, &self.wakes, event);
            }
        }
    }
}

impl Listener {
    /// One published wake: `origin, tenant, channel` and, from a caller's
    /// notify, its payload, each as `<length>:<bytes>`. This handle's own
    /// were delivered by `notify`.
    fn take_wake(&self, message: &[u8]) {
        let parts = netstrings(message);
        let (origin, tenant, channel, payload) = match parts.as_deref() {
            Some([origin, tenant, channel]) => (origin, tenant, channel, &[][..]),
            Some([origin, tenant, channel, payload]) => (origin, tenant, channel, *payload),
            _ => {
                tracing::warn!("relaystore redis: an unreadable wake message");
                return;
            }
        };
        if *origin == self.origin.as_bytes() {
            return;
        }
        let (Some(tenant), Ok(channel)) = (number(tenant), std::str::from_utf8(channel)) else {
            return;
        };
        // Refused only once the handle is gone: nothing to wake then.
        let _ = self
            .wakes
            .notify_with(&(TenantId(tenant), Arc::from(channel)), payload);
    }
}

fn number(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// Splits `<length>:<bytes>` parts.
fn netstrings(mut bytes: &[u8]) -> Option<Vec<&[u8]>> {
    let mut parts = Vec::new();
    while !bytes.is_empty() {
        let colon = bytes.iter().position(|&b| b == b':')?;
        let len = number(&bytes[..colon])? as usize;
        let rest = &bytes[colon + 1..];
        parts.push(rest.get(..len)?);
        bytes = &rest[len..];
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::events::Cause;

    #[test]
    fn an_event_reads_with_its_root_and_holder() {
        let (t, inc) = (TenantId(3), 9);
        // A lease revoked, with its holder.
        let lease = decode(t, inc, 1, b"lr-h6:host:a17").unwrap();
        assert_eq!(lease.id, RecordId::Lease(LeaseId::new(inc, 17)));
        assert_eq!(lease.cause, Cause::Revoked);
        assert_eq!(lease.holder.as_deref(), Some("host:a"));
        assert_eq!(lease.root, None);
        // Its listing, cascaded, names it as the root.
        let listing = decode(t, inc, 1, b"pcrl2:17-lobby").unwrap();
        assert_eq!(listing.id, RecordId::Listing(Arc::from("lobby")));
        assert_eq!(listing.holder, None);
        assert_eq!(
            listing.root,
            Some(Root {
                collection: Collection::Leases,
                id: RecordId::Lease(LeaseId::new(inc, 17)),
                cause: Cause::Revoked,
            })
        );
        assert_eq!(listing.root_cause(), Cause::Revoked);
        // An attempt cascaded from an unpublished listing.
        let attempt = decode(t, inc, 1, b"acxp5:lobby-4").unwrap();
        assert_eq!(
            attempt.root.unwrap().id,
            RecordId::Listing(Arc::from("lobby"))
        );
        // Truncated or unknown fields are not events.
        for bad in [&b"pcrl9:17-lobby"[..], b"lrxh6:host", b"lr?lobby", b"zr--1"] {
            assert_eq!(
                decode(t, inc, 1, bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
