//! Join attempts (SPEC §4): bind once, consume exactly once, replay
//! memory, the typed errors, idempotent creation, and a consume retried
//! under its idempotency key.

use super::{config, ensure, ensure_eq, join_all, Fault, Harness, Outcome};
use crate::base::error::{ConflictReason, Error};
use crate::base::ids::{JoinToken, TenantId, TOKEN_SECRET_BYTES};
use crate::contract::engine::RelayEngine;
use crate::contract::relay::{AttemptState, ListingInfo};
use std::net::SocketAddr;

const T: TenantId = TenantId(1);

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([203, 0, 113, 7], port))
}

async fn hosted<E: RelayEngine>(e: &E, ttl: std::time::Duration) -> Result<(), Error> {
    let g = e.grant(T, "host", ttl, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await.map(drop)
}

pub(super) async fn bind_then_consume_once<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    hosted(&e, u * 600).await?;
    let t = e.begin_join(T, "lobby", "client", u * 10, None).await?;
    // An update is the same listing: its attempts stay.
    let version = e.get_listing(T, "lobby").await?.version;
    e.update_listing(T, "lobby", version, b"full=0").await?;
    ensure_eq!(t.remaining, u * 10, "a ticket's TTL");
    ensure_eq!(t.token.attempt(), t.attempt, "the token names its attempt");
    let b = e.bind_endpoint(T, t.attempt, &t.token, addr(1)).await?;
    ensure_eq!((b.attempt, b.addr), (t.attempt, addr(1)), "bind");
    ensure_eq!(
        e.bind_endpoint(T, t.attempt, &t.token, addr(1)).await,
        Ok(b),
        "the winning bind repeats"
    );
    ensure_eq!(
        e.bind_endpoint(T, t.attempt, &t.token, addr(2)).await,
        Err(Error::conflict(ConflictReason::BoundElsewhere, b.version)),
        "a second address"
    );
    let a = e.consume(T, &t.token, None).await?;
    ensure_eq!(
        (a.attempt, a.client.as_ref(), a.listing.as_ref(), a.addr),
        (t.attempt, "client", "lobby", addr(1)),
        "admission"
    );
    ensure_eq!(
        e.consume(T, &t.token, None).await.map(drop),
        Err(Error::ReplayRejected),
        "second consume"
    );
    ensure_eq!(
        e.cancel_join(T, t.attempt).await,
        Err(Error::ReplayRejected),
        "cancel after consume"
    );
    // The per-listing cap (2) counts pending attempts only.
    let pending = [
        e.begin_join(T, "lobby", "c1", u * 10, None).await?,
        e.begin_join(T, "lobby", "c2", u * 10, None).await?,
    ];
    ensure!(
        matches!(
            e.begin_join(T, "lobby", "c3", u * 10, None).await,
            Err(Error::CapacityExceeded { .. })
        ),
        "a third pending attempt"
    );
    e.cancel_join(T, pending[0].attempt).await?;
    e.begin_join(T, "lobby", "c3", u * 10, None).await?;
    // Remembered past the attempt's deadline, for the replay grace (5 units).
    h.advance(u * 12).await;
    ensure_eq!(
        e.consume(T, &t.token, None).await.map(drop),
        Err(Error::ReplayRejected),
        "replay after the attempt's deadline"
    );
    Ok(())
}

pub(super) async fn concurrent_consumes<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    hosted(&e, u * 600).await?;
    let t = e.begin_join(T, "lobby", "client", u * 10, None).await?;
    let binds = join_all(
        (1..=8)
            .map(|port| e.bind_endpoint(T, t.attempt, &t.token, addr(port)))
            .collect(),
    )
    .await;
    let bound: Vec<_> = binds.iter().filter_map(|b| b.as_ref().ok()).collect();
    ensure_eq!(bound.len(), 1, "binds that won: {binds:?}");
    let consumes = join_all((0..8).map(|_| e.consume(T, &t.token, None)).collect()).await;
    let admitted = consumes.iter().filter(|c| c.is_ok()).count();
    let replays = consumes
        .iter()
        .filter(|c| **c == Err(Error::ReplayRejected))
        .count();
    ensure_eq!((admitted, replays), (1, 7), "consumes: {consumes:?}");
    Ok(())
}

pub(super) async fn errors<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    hosted(&e, u * 600).await?;
    ensure_eq!(
        e.begin_join(T, "nope", "c", u, None).await.map(drop),
        Err(Error::NotFound),
        "join a missing listing"
    );
    let t = e.begin_join(T, "lobby", "c", u * 10, None).await?;
    ensure!(
        matches!(
            e.consume(T, &t.token, None).await,
            Err(Error::Conflict {
                reason: ConflictReason::NotBound,
                ..
            })
        ),
        "consuming an unbound attempt"
    );
    let mut forged = t.token.to_bytes();
    forged[16 + TOKEN_SECRET_BYTES - 1] ^= 1;
    let forged = JoinToken::from_bytes(forged);
    ensure_eq!(
        e.bind_endpoint(T, t.attempt, &forged, addr(1))
            .await
            .map(drop),
        Err(Error::NotFound),
        "a forged token binds"
    );
    ensure_eq!(
        e.consume(T, &forged, None).await.map(drop),
        Err(Error::NotFound),
        "a forged token consumes"
    );
    // Text a client garbled, or made up, that still parses: its attempt
    // id is of no incarnation the store had. An unknown token, not a
    // restart.
    for text in [
        "A".repeat(43),
        format!("{}A", &"relay-garbage_".repeat(3)[..42]),
    ] {
        let garbled: JoinToken = text
            .parse()
            .map_err(|_| Fault::new(format!("{text} does not parse")))?;
        ensure_eq!(
            e.consume(T, &garbled, None).await.map(drop),
            Err(Error::NotFound),
            "a garbled token consumes"
        );
        ensure_eq!(
            e.bind_endpoint(T, garbled.attempt(), &garbled, addr(1))
                .await
                .map(drop),
            Err(Error::NotFound),
            "a garbled token binds"
        );
    }
    e.cancel_join(T, t.attempt).await?;
    ensure_eq!(
        e.bind_endpoint(T, t.attempt, &t.token, addr(1))
            .await
            .map(drop),
        Err(Error::NotFound),
        "bind after cancel"
    );
    ensure_eq!(
        e.cancel_join(T, t.attempt).await,
        Err(Error::NotFound),
        "cancel twice"
    );
    let late = e.begin_join(T, "lobby", "c", u * 2, None).await?;
    h.advance(u * 3).await;
    ensure!(
        matches!(
            e.bind_endpoint(T, late.attempt, &late.token, addr(1)).await,
            Err(Error::Expired | Error::NotFound)
        ),
        "bind after the ticket's deadline"
    );
    Ok(())
}

pub(super) async fn inspection<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    hosted(&e, u * 600).await?;
    let t = e.begin_join(T, "lobby", "client", u * 10, None).await?;
    let seen = e.get_attempt(T, t.attempt).await?;
    ensure_eq!(
        (
            seen.attempt,
            seen.listing.as_ref(),
            seen.client.as_ref(),
            seen.state
        ),
        (t.attempt, "lobby", "client", AttemptState::Pending),
        "a pending attempt"
    );
    ensure!(
        seen.remaining <= u * 10 && seen.remaining > u * 5,
        "a pending attempt's time left: {:?} of {:?}",
        seen.remaining,
        u * 10
    );
    ensure_eq!(
        e.get_attempt(TenantId(2), t.attempt).await.map(drop),
        Err(Error::NotFound),
        "another tenant's attempt"
    );
    let b = e.bind_endpoint(T, t.attempt, &t.token, addr(1)).await?;
    let seen = e.get_attempt(T, t.attempt).await?;
    ensure_eq!(
        (seen.state, seen.version),
        (AttemptState::Bound(addr(1)), b.version),
        "a bound attempt"
    );
    e.consume(T, &t.token, None).await?;
    let seen = e.get_attempt(T, t.attempt).await?;
    ensure_eq!(
        seen.state,
        AttemptState::Consumed(addr(1)),
        "a consumed attempt"
    );
    ensure!(
        seen.version > b.version,
        "consuming raises the version: {} after {}",
        seen.version,
        b.version
    );
    // Remembered for the token's deadline plus the replay grace (5 units).
    ensure!(
        seen.remaining <= u * 15 && seen.remaining > u * 10,
        "a consumed token's memory left: {:?}",
        seen.remaining
    );
    // The listing goes: a pending attempt with it, the replay memory not.
    let p = e.begin_join(T, "lobby", "other", u * 10, None).await?;
    e.unpublish(T, "lobby", None).await?;
    ensure_eq!(
        e.get_attempt(T, p.attempt).await.map(drop),
        Err(Error::NotFound),
        "a pending attempt of a removed listing"
    );
    ensure_eq!(
        e.get_attempt(T, t.attempt).await.map(|a| a.state),
        Ok(AttemptState::Consumed(addr(1))),
        "a consumed attempt outlives its listing"
    );
    ensure_eq!(
        e.cancel_join(T, t.attempt).await,
        Err(Error::ReplayRejected),
        "reading changed nothing"
    );
    Ok(())
}

pub(super) async fn idempotency<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 600, Some("grant-1")).await?;
    let again = e.grant(T, "host", u * 600, Some("grant-1")).await?;
    ensure_eq!(
        (again.id, again.fence, again.version),
        (g.id, g.fence, g.version),
        "a repeated grant returns the original"
    );
    ensure_eq!(
        e.grant(T, "other", u * 600, Some("grant-1"))
            .await
            .map(drop),
        Err(Error::IdempotencyMismatch),
        "same key, other parameters"
    );
    let l = e.publish(T, g.id, "lobby", b"", Some("pub-1")).await?;
    // A repeat is the same listing, with its lease's time left now.
    let repeated = e.publish(T, g.id, "lobby", b"", Some("pub-1")).await?;
    ensure_eq!(
        ListingInfo {
            remaining: l.remaining,
            ..repeated.clone()
        },
        l,
        "a repeated publish"
    );
    ensure!(
        repeated.remaining <= l.remaining,
        "a repeat's time left {:?} is measured again (first {:?})",
        repeated.remaining,
        l.remaining
    );
    ensure_eq!(
        e.publish(T, g.id, "lobby", b"other", Some("pub-1"))
            .await
            .map(drop),
        Err(Error::IdempotencyMismatch),
        "a publish with the same key and other attributes"
    );
    let t = e
        .begin_join(T, "lobby", "c", u * 10, Some("join-1"))
        .await?;
    let t2 = e
        .begin_join(T, "lobby", "c", u * 10, Some("join-1"))
        .await?;
    ensure_eq!(
        (t2.attempt, t2.token.to_bytes()),
        (t.attempt, t.token.to_bytes()),
        "a repeated join"
    );
    ensure_eq!(
        e.grant(TenantId(2), "host", u * 600, Some("grant-1"))
            .await
            .map(|g2| g2.id == g.id),
        Ok(false),
        "keys are per tenant"
    );
    Ok(())
}

/// A consume under an idempotency key is safe to retry: its repeat
/// answers the admission it made, while the token stays used for every
/// other call; a key is the answer of one token's consume, and a consume
/// that failed leaves its key unused.
pub(super) async fn consume_retried_with_a_key<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    hosted(&e, u * 600).await?;
    let t = e.begin_join(T, "lobby", "client", u * 10, None).await?;
    e.bind_endpoint(T, t.attempt, &t.token, addr(1)).await?;
    let a = e.consume(T, &t.token, Some("admit-1")).await?;
    ensure_eq!(
        (a.attempt, a.client.as_ref(), a.listing.as_ref(), a.addr),
        (t.attempt, "client", "lobby", addr(1)),
        "admission under a key"
    );
    ensure_eq!(
        e.consume(T, &t.token, Some("admit-1")).await,
        Ok(a.clone()),
        "the consume repeated under its key"
    );
    ensure_eq!(
        e.consume(T, &t.token, None).await.map(drop),
        Err(Error::ReplayRejected),
        "the token without the key"
    );
    ensure_eq!(
        e.consume(T, &t.token, Some("admit-2")).await.map(drop),
        Err(Error::ReplayRejected),
        "the token under another key"
    );
    let mut forged = t.token.to_bytes();
    forged[16 + TOKEN_SECRET_BYTES - 1] ^= 1;
    ensure_eq!(
        e.consume(T, &JoinToken::from_bytes(forged), Some("admit-1"))
            .await
            .map(drop),
        Err(Error::IdempotencyMismatch),
        "a forged secret under the key"
    );
    // A consume that fails remembers nothing under its key.
    let other = e.begin_join(T, "lobby", "client-2", u * 10, None).await?;
    ensure_eq!(
        e.consume(T, &other.token, Some("admit-1")).await.map(drop),
        Err(Error::IdempotencyMismatch),
        "another token under a used key"
    );
    ensure!(
        matches!(
            e.consume(T, &other.token, Some("admit-3")).await,
            Err(Error::Conflict {
                reason: ConflictReason::NotBound,
                ..
            })
        ),
        "an unbound attempt under a new key"
    );
    e.bind_endpoint(T, other.attempt, &other.token, addr(2))
        .await?;
    let b = e.consume(T, &other.token, Some("admit-3")).await?;
    ensure_eq!(
        (b.attempt, b.addr),
        (other.attempt, addr(2)),
        "the key a failed consume left unused"
    );
    ensure_eq!(
        e.consume(T, &other.token, Some("admit-3")).await,
        Ok(b),
        "its repeat"
    );
    Ok(())
}
