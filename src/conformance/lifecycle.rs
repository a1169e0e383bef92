//! Revocation, removal events and lifecycle (SPEC §4, §7): cascades are
//! visible the moment revoke returns, every removal is announced, a drain
//! ends in `Stopped`, and ids from another incarnation are `Restarted`
//! (a join token from one is unknown: `NotFound`).

use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::error::Error;
use crate::base::ids::{AttemptId, LeaseId, TenantId};
use crate::contract::engine::{Events, RelayEngine};
use crate::contract::events::{Cause, Collection, Event, Received, RecordId, RecvError, Root};
use crate::contract::lifecycle::Health;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([203, 0, 113, 7], port))
}

pub(super) async fn cascade<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 100, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    let t = e.begin_join(T, "lobby", "c", u * 10, None).await?;
    e.bind_endpoint(T, t.attempt, &t.token, addr(1)).await?;
    e.heartbeat(T, "alice", u * 10, None, Some(g.id)).await?;
    e.try_lock(T, "job", "a", u * 10, Some(g.id)).await?;
    e.revoke(T, g.id).await?;
    ensure_eq!(
        e.get_listing(T, "lobby").await.map(drop),
        Err(Error::NotFound),
        "listing"
    );
    ensure_eq!(
        e.consume(T, &t.token, None).await.map(drop),
        Err(Error::NotFound),
        "consume"
    );
    ensure_eq!(
        e.get_presence(T, "alice").await.map(drop),
        Err(Error::NotFound),
        "presence"
    );
    ensure_eq!(
        e.get_lock(T, "job").await.map(drop),
        Err(Error::NotFound),
        "lock"
    );
    // Revoking a listing takes its attempts with it.
    let g2 = e.grant(T, "host", u * 100, None).await?;
    e.publish(T, g2.id, "lobby", b"", None).await?;
    let t2 = e.begin_join(T, "lobby", "c", u * 10, None).await?;
    e.revoke_listing(T, "lobby").await?;
    ensure_eq!(
        e.bind_endpoint(T, t2.attempt, &t2.token, addr(1))
            .await
            .map(drop),
        Err(Error::NotFound),
        "an attempt of a revoked listing"
    );
    ensure!(e.get_lease(T, g2.id).await.is_ok(), "the lease stays");
    Ok(())
}

pub(super) async fn revoke_tenant<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let mut leases = Vec::new();
    for tenant in [T, OTHER] {
        let g = e.grant(tenant, "host", u * 100, None).await?;
        e.publish(tenant, g.id, "lobby", b"", None).await?;
        e.heartbeat(tenant, "alice", u * 10, None, None).await?;
        e.try_lock(tenant, "job", "a", u * 10, None).await?;
        leases.push(g.id);
    }
    e.revoke_tenant(T).await?;
    ensure_eq!(
        e.get_lease(T, leases[0]).await.map(drop),
        Err(Error::Revoked),
        "lease"
    );
    ensure_eq!(
        e.get_listing(T, "lobby").await.map(drop),
        Err(Error::NotFound),
        "listing"
    );
    ensure_eq!(
        e.get_presence(T, "alice").await.map(drop),
        Err(Error::NotFound),
        "presence"
    );
    ensure_eq!(
        e.get_lock(T, "job").await.map(drop),
        Err(Error::NotFound),
        "lock"
    );
    ensure!(
        e.get_lease(OTHER, leases[1]).await.is_ok(),
        "neighbour lease"
    );
    ensure!(
        e.get_listing(OTHER, "lobby").await.is_ok(),
        "neighbour listing"
    );
    ensure!(e.get_lock(OTHER, "job").await.is_ok(), "neighbour lock");
    let g = e.grant(T, "host", u * 100, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    Ok(())
}

/// Everything buffered now, as (collection, tenant, cause).
fn drained<S: Events>(events: &S) -> Result<Vec<(Collection, TenantId, Cause)>, String> {
    let mut out = Vec::new();
    while let Some(received) = events.try_recv() {
        match received {
            Received::Event(e) => out.push((e.collection, e.tenant, e.cause)),
            other => return Err(format!("unexpected {other:?}")),
        }
    }
    out.sort_by_key(|&(c, t, cause)| (c as u8, t, format!("{cause:?}")));
    Ok(out)
}

pub(super) async fn events<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let events = e.subscribe().await?;
    let members = e.subscribe_to(&[Collection::Presence]).await?;
    let g = e.grant(T, "host", u * 100, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    e.revoke(T, g.id).await?;
    let seen = drained(&events).map_err(super::Fault::new)?;
    ensure_eq!(
        seen,
        vec![
            (Collection::Leases, T, Cause::Revoked),
            (Collection::Listings, T, Cause::Cascaded)
        ],
        "a revocation's events"
    );
    let short = e.grant(OTHER, "host", u * 2, None).await?;
    e.publish(OTHER, short.id, "room", b"", None).await?;
    h.advance(u * 3).await;
    let seen = drained(&events).map_err(super::Fault::new)?;
    ensure_eq!(
        seen,
        vec![
            (Collection::Leases, OTHER, Cause::Expired),
            (Collection::Listings, OTHER, Cause::Cascaded)
        ],
        "an expiry's events"
    );
    let waited = e.heartbeat(T, "bob", u * 50, None, None).await;
    ensure!(waited.is_ok(), "heartbeat: {waited:?}");
    e.leave(T, "bob").await?;
    match events.recv().await {
        Ok(Received::Event(ev)) => ensure_eq!(
            (ev.collection, ev.tenant, ev.cause),
            (Collection::Presence, T, Cause::Released),
            "a wait for the next event"
        ),
        other => ensure!(false, "recv: {other:?}"),
    }
    ensure_eq!(
        drained(&members).map_err(super::Fault::new)?,
        vec![(Collection::Presence, T, Cause::Released)],
        "a subscription to presence only"
    );
    Ok(())
}

/// A hosted session of tenant `T`: a lease held by `host-a` with a
/// listing `lobby`, a join attempt on it, a presence record `alice` and a
/// lock `job` owned by `worker-1`, both under the lease. Returns the lease
/// and the attempt.
async fn hosted_session<E: RelayEngine>(e: &E, u: Duration) -> Result<(LeaseId, AttemptId), Error> {
    let g = e.grant(T, "host-a", u * 100, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    let t = e.begin_join(T, "lobby", "c", u * 50, None).await?;
    e.heartbeat(T, "alice", u * 50, None, Some(g.id)).await?;
    e.try_lock(T, "job", "worker-1", u * 50, Some(g.id)).await?;
    Ok((g.id, t.attempt))
}

/// `seen` holds the session of [`hosted_session`] revoked: its lease
/// `Revoked` naming its holder, everything under it `Cascaded` with the
/// lease as its root (the lock naming its owner).
fn revoked_session(seen: &[Event], lease: LeaseId, attempt: AttemptId) -> Outcome {
    let revoked = of(seen, &RecordId::Lease(lease))?;
    ensure_eq!(
        (revoked.cause, revoked.holder.as_deref(), &revoked.root),
        (Cause::Revoked, Some("host-a"), &None),
        "a revoked lease names its holder"
    );
    let root = Some(Root {
        collection: Collection::Leases,
        id: RecordId::Lease(lease),
        cause: Cause::Revoked,
    });
    for (id, holder) in [
        (RecordId::Listing("lobby".into()), None),
        (RecordId::Attempt(attempt), None),
        (RecordId::Member("alice".into()), None),
        (RecordId::Key("job".into()), Some("worker-1")),
    ] {
        let child = of(seen, &id)?;
        ensure_eq!(
            (child.cause, &child.root, child.holder.as_deref()),
            (Cause::Cascaded, &root, holder),
            "a record under a revoked lease names it as the root"
        );
        ensure_eq!(child.root_cause(), Cause::Revoked, "the root cause");
    }
    Ok(())
}

/// A tenant's revocation announces what it ends: each live lease
/// `Revoked` with its holder, what hangs from it `Cascaded` with the lease
/// as its root (a listing, its join attempt, a presence record, a lock with
/// its owner), a presence record of its own `Revoked`; nothing of another
/// tenant. An engine may announce after the call returns (the Redis engine
/// announces as it buries), so the check waits one unit first.
pub(super) async fn revoke_tenant_events<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let events = e.subscribe().await?;
    let (lease, attempt) = hosted_session(&e, u).await?;
    e.heartbeat(T, "bob", u * 50, None, None).await?;
    let other = e.grant(OTHER, "host-b", u * 100, None).await?;
    e.heartbeat(OTHER, "carol", u * 50, None, Some(other.id))
        .await?;
    e.revoke_tenant(T).await?;
    h.advance(u).await;
    let seen = taken(&events)?;
    ensure!(
        seen.iter().all(|ev| ev.tenant == T),
        "only the revoked tenant's records: {seen:?}"
    );
    revoked_session(&seen, lease, attempt)?;
    let member = of(&seen, &RecordId::Member("bob".into()))?;
    ensure_eq!(
        (member.cause, &member.root),
        (Cause::Revoked, &None),
        "a revoked tenant's own presence record"
    );
    ensure_eq!(seen.len(), 6, "one event per record: {seen:?}");
    Ok(())
}

/// A revoked lease's tombstone ends after `tombstone_ttl`: until then the
/// lease reads `Revoked`, then `NotFound`, and the tombstone's end is
/// announced once (`Tombstones`, `Expired`, the lease's id), as are those
/// of a revoked tenant's leases.
pub(super) async fn tombstone_end<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let mut cfg = config(u);
    cfg.tombstone_ttl = u * 3;
    let e = h.engine(cfg).await?;
    let events = e.subscribe_to(&[Collection::Tombstones]).await?;
    let g = e.grant(T, "host", u * 100, None).await?;
    let held = e.grant(OTHER, "host", u * 100, None).await?;
    e.revoke(T, g.id).await?;
    e.revoke_tenant(OTHER).await?;
    h.advance(u).await;
    ensure_eq!(
        e.get_lease(T, g.id).await.map(drop),
        Err(Error::Revoked),
        "a tombstone's lease"
    );
    ensure_eq!(
        taken(&events)?,
        Vec::<Event>::new(),
        "a tombstone that lives"
    );
    h.advance(u * 3).await;
    ensure_eq!(
        e.get_lease(T, g.id).await.map(drop),
        Err(Error::NotFound),
        "a lease whose tombstone ended"
    );
    let mut ended: Vec<(TenantId, RecordId, Cause)> = taken(&events)?
        .into_iter()
        .map(|ev| (ev.tenant, ev.id, ev.cause))
        .collect();
    ended.sort_by_key(|(tenant, _, _)| *tenant);
    ensure_eq!(
        ended,
        vec![
            (T, RecordId::Lease(g.id), Cause::Expired),
            (OTHER, RecordId::Lease(held.id), Cause::Expired),
        ],
        "the tombstones' ends"
    );
    Ok(())
}

/// Whether a future has finished at its first poll.
fn done_now<F: Future>(future: Pin<&mut F>) -> bool {
    future
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_ready()
}

/// Every event buffered now, in arrival order.
pub(super) fn taken<S: Events>(events: &S) -> Result<Vec<Event>, super::Fault> {
    let mut out = Vec::new();
    while let Some(received) = events.try_recv() {
        match received {
            Received::Event(e) => out.push(e),
            other => return Err(super::Fault::new(format!("unexpected {other:?}"))),
        }
    }
    Ok(out)
}

/// The event of the record `id`, from `seen`.
fn of<'a>(seen: &'a [Event], id: &RecordId) -> Result<&'a Event, super::Fault> {
    seen.iter()
        .find(|e| &e.id == id)
        .ok_or_else(|| super::Fault::new(format!("no event for {id:?} in {seen:?}")))
}

pub(super) async fn event_details<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let events = e.subscribe().await?;
    let (lease, attempt) = hosted_session(&e, u).await?;
    e.revoke(T, lease).await?;
    let seen = taken(&events)?;
    ensure!(
        seen.windows(2).all(|w| w[0].seq < w[1].seq),
        "a subscriber is handed the numbers rising: {seen:?}"
    );
    revoked_session(&seen, lease, attempt)?;

    // An unpublished listing is the root of its attempts' removal.
    let g2 = e.grant(T, "host-b", u * 20, None).await?;
    e.publish(T, g2.id, "room", b"", None).await?;
    let t2 = e.begin_join(T, "room", "c", u * 10, None).await?;
    e.unpublish(T, "room", None).await?;
    let seen = taken(&events)?;
    let attempt = of(&seen, &RecordId::Attempt(t2.attempt))?;
    ensure_eq!(
        (attempt.cause, &attempt.root),
        (
            Cause::Cascaded,
            &Some(Root {
                collection: Collection::Listings,
                id: RecordId::Listing("room".into()),
                cause: Cause::Released,
            })
        ),
        "an attempt of an unpublished listing"
    );
    ensure_eq!(
        of(&seen, &RecordId::Listing("room".into()))?.root,
        None,
        "a listing removed for its own sake has no root"
    );

    // An expired lease is the root of what went with it.
    e.publish(T, g2.id, "hall", b"", None).await?;
    h.advance(u * 21).await;
    let seen = taken(&events)?;
    let lease = of(&seen, &RecordId::Lease(g2.id))?;
    ensure_eq!(
        (lease.cause, lease.holder.as_deref()),
        (Cause::Expired, Some("host-b")),
        "an expired lease names its holder"
    );
    ensure_eq!(
        of(&seen, &RecordId::Listing("hall".into()))?.root_cause(),
        Cause::Expired,
        "a listing that went with an expired lease"
    );
    Ok(())
}

/// The memories the store keeps past an operation are announced when they
/// go: a consumed token's replay memory once its grace has passed
/// (`Replay`, as the attempt), and idempotency records once their
/// `idempotency_ttl` has (`Idempotency`, by key), each `Expired`.
pub(super) async fn expired_memories<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let mut cfg = config(u);
    cfg.idempotency_ttl = u * 5;
    let e = h.engine(cfg).await?;
    let events = e
        .subscribe_to(&[Collection::Replay, Collection::Idempotency])
        .await?;
    let g = e.grant(T, "host", u * 1000, Some("grant-key")).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    let t = e.begin_join(T, "lobby", "c", u * 2, None).await?;
    e.bind_endpoint(T, t.attempt, &t.token, addr(1)).await?;
    e.consume(T, &t.token, Some("consume-key")).await?;
    ensure_eq!(
        taken(&events)?.len(),
        0,
        "nothing announced while the memories hold"
    );
    // Past the attempt's deadline (2 units), its replay grace (5) and
    // idempotency_ttl (5).
    h.advance(u * 10).await;
    let mut seen: Vec<(Collection, RecordId, Cause)> = taken(&events)?
        .into_iter()
        .map(|ev| (ev.collection, ev.id, ev.cause))
        .collect();
    seen.sort_by_key(|(c, id, _)| (*c as usize, format!("{id:?}")));
    ensure_eq!(
        seen,
        vec![
            (
                Collection::Replay,
                RecordId::Attempt(t.attempt),
                Cause::Expired
            ),
            (
                Collection::Idempotency,
                RecordId::Key("consume-key".into()),
                Cause::Expired
            ),
            (
                Collection::Idempotency,
                RecordId::Key("grant-key".into()),
                Cause::Expired
            ),
        ],
        "the expired memories' events"
    );
    Ok(())
}

pub(super) async fn drain<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 600, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    let t = e.begin_join(T, "lobby", "c", u * 60, None).await?;
    ensure_eq!(e.health().await, Health::Ready, "before");
    ensure!(
        matches!(
            e.begin_drain(u * 3601).await,
            Err(Error::InvalidArgument { .. })
        ),
        "a drain window over drain_window_max"
    );
    ensure_eq!(e.health().await, Health::Ready, "after a refused drain");
    let events = e.subscribe().await?;
    let mut drained = std::pin::pin!(e.drained());
    ensure!(!done_now(drained.as_mut()), "drained before any drain");
    let remaining = e.begin_drain(u * 10).await?;
    ensure_eq!(remaining, u * 10, "the drain window");
    ensure!(!done_now(drained.as_mut()), "drained while draining");
    ensure!(
        matches!(e.health().await, Health::Draining { remaining } if remaining <= u * 10),
        "draining"
    );
    ensure_eq!(
        e.grant(T, "x", u, None).await.map(drop),
        Err(Error::Draining),
        "a grant while draining"
    );
    ensure_eq!(
        e.begin_join(T, "lobby", "c2", u, None).await.map(drop),
        Err(Error::Draining),
        "a join while draining"
    );
    e.renew(T, g.id, u * 600).await?;
    e.bind_endpoint(T, t.attempt, &t.token, addr(1)).await?;
    e.consume(T, &t.token, None).await?;
    h.advance(u * 11).await;
    ensure!(
        done_now(drained.as_mut()),
        "a wait for the drain's end, after the window and a sweep"
    );
    // The subscription hands over what it holds (on the in-memory store,
    // what the drain revoked; a Redis handle revokes nothing), then ends,
    // with the engine's handle still held.
    taken(&events)?;
    ensure!(
        matches!(
            std::pin::pin!(events.recv())
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(Err(RecvError::Closed))
        ),
        "a subscription outlived its store's drain"
    );
    ensure!(
        done_now(std::pin::pin!(e.drained())),
        "a new wait once drained"
    );
    ensure_eq!(e.health().await, Health::Stopped, "after the window");
    ensure_eq!(
        e.grant(T, "x", u, None).await.map(drop),
        Err(Error::STOPPED),
        "a grant once stopped"
    );
    ensure!(
        e.get_lease(T, g.id).await.is_err(),
        "a lease outlived the drain"
    );
    Ok(())
}

pub(super) async fn restart<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let before = h.engine(config(u)).await?;
    let g = before.grant(T, "host", u * 100, None).await?;
    before.publish(T, g.id, "lobby", b"", None).await?;
    let t = before.begin_join(T, "lobby", "c", u * 10, None).await?;
    let after = h.engine(config(u)).await?;
    ensure_eq!(
        after.get_lease(T, g.id).await.map(drop),
        Err(Error::Restarted),
        "a lease id"
    );
    ensure_eq!(
        after.renew(T, g.id, u).await.map(drop),
        Err(Error::Restarted),
        "renew"
    );
    // A token comes from a client: one from before the restart is an
    // unknown token, as a made-up one is (the store cannot tell them
    // apart).
    ensure_eq!(
        after.consume(T, &t.token, None).await.map(drop),
        Err(Error::NotFound),
        "a token"
    );
    ensure_eq!(
        after
            .bind_endpoint(T, t.attempt, &t.token, addr(1))
            .await
            .map(drop),
        Err(Error::NotFound),
        "bind"
    );
    // The relay's own attempt id still says what happened.
    ensure_eq!(
        after.get_attempt(T, t.attempt).await.map(drop),
        Err(Error::Restarted),
        "an attempt id"
    );
    Ok(())
}
