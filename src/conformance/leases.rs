//! Leases (SPEC §4): grant, renew, get, revoke, expiry, endpoints, ids.

use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::error::{ConflictReason, Error};
use crate::base::ids::{AttemptId, JoinToken, LeaseId, TenantId};
use crate::contract::engine::RelayEngine;
use crate::contract::relay::Cursor;
use std::net::SocketAddr;
use std::time::Duration;

const T: TenantId = TenantId(1);

pub(super) async fn grant_renew_get_revoke<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 10, None).await?;
    ensure_eq!(g.remaining, u * 10, "a grant reports its whole TTL");
    let info = e.get_lease(T, g.id).await?;
    ensure_eq!(
        (info.id, info.holder.as_ref(), info.fence, info.version),
        (g.id, "host", g.fence, g.version),
        "get_lease"
    );
    ensure!(info.remaining <= u * 10, "remaining {:?}", info.remaining);
    let r = e.renew(T, g.id, u * 20).await?;
    ensure!(r.version > g.version, "a renewal moves the version");
    ensure_eq!(r.remaining, u * 20, "a renewal resets to the new TTL");
    ensure_eq!(
        e.renew_at(T, g.id, u * 20, g.version).await,
        Err(Error::conflict(ConflictReason::Version, r.version)),
        "renew_at a stale version"
    );
    let r2 = e.renew_at(T, g.id, u * 5, r.version).await?;
    ensure!(r2.version > r.version, "renew_at moves the version");
    e.revoke(T, g.id).await?;
    ensure_eq!(e.revoke(T, g.id).await, Ok(()), "revoke is idempotent");
    ensure_eq!(e.get_lease(T, g.id).await, Err(Error::Revoked), "get");
    ensure_eq!(e.renew(T, g.id, u).await, Err(Error::Revoked), "renew");
    Ok(())
}

/// Holders of every length read back as given, from leases and locks:
/// the shortest, the longest kept inline by the embedded engine (23 bytes)
/// and one past it, multi-byte text, and the longest name allowed.
pub(super) async fn holders_of_every_length<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let cfg = config(u);
    let longest = "h".repeat(cfg.name_bytes_max);
    let e = h.engine(cfg).await?;
    let names = [
        "a".to_owned(),
        "x".repeat(23),
        "y".repeat(24),
        "é".repeat(12),
        longest,
    ];
    let mut leases = Vec::new();
    for name in &names {
        leases.push(e.grant(T, name, u * 100, None).await?.id);
        let lock = e.try_lock(T, name, name, u * 100, None).await?;
        ensure!(lock.is_some(), "a free lock named {} bytes", name.len());
    }
    for (name, id) in names.iter().zip(leases) {
        let got = e.get_lease(T, id).await?.holder;
        ensure_eq!(got.as_str(), name.as_str(), "lease holder");
        let got = e.get_lock(T, name).await?.holder;
        ensure_eq!(got.as_str(), name.as_str(), "lock holder");
    }
    Ok(())
}

pub(super) async fn fences_increase<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let mut last = 0;
    for i in 0..12 {
        let g = e.grant(TenantId(i % 3), "h", u * 10, None).await?;
        ensure!(g.fence > last, "fence {} after {last}", g.fence);
        last = g.fence;
        if i % 2 == 0 {
            e.revoke(TenantId(i % 3), g.id).await?;
        }
    }
    Ok(())
}

pub(super) async fn expiry<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let short = e.grant(T, "short", u * 2, None).await?;
    let long = e.grant(T, "long", u * 100, None).await?;
    h.advance(u * 3).await;
    for (what, got) in [
        ("get", e.get_lease(T, short.id).await.map(drop)),
        ("renew", e.renew(T, short.id, u * 10).await.map(drop)),
        ("revoke", e.revoke(T, short.id).await),
    ] {
        ensure!(
            matches!(got, Err(Error::Expired | Error::NotFound)),
            "{what} after the deadline: {got:?}"
        );
    }
    ensure_eq!(
        e.get_lease(T, long.id).await?.holder.as_ref(),
        "long",
        "an unexpired neighbour"
    );
    Ok(())
}

pub(super) async fn endpoints<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 100, None).await?;
    let addr = |port| SocketAddr::from(([203, 0, 113, 7], port));
    e.observe_endpoint(T, g.id, addr(1)).await?;
    h.advance(u).await;
    e.observe_endpoint(T, g.id, addr(2)).await?;
    let seen = e.endpoints(T, g.id).await?;
    ensure_eq!(
        seen.iter().map(|s| s.addr).collect::<Vec<_>>(),
        vec![addr(2), addr(1)],
        "most recent first"
    );
    ensure!(seen[0].age <= seen[1].age, "ages {seen:?}");
    // Past the cap (2) the least recently seen one is replaced.
    h.advance(u).await;
    e.observe_endpoint(T, g.id, addr(3)).await?;
    let seen = e.endpoints(T, g.id).await?;
    ensure_eq!(
        seen.iter().map(|s| s.addr).collect::<Vec<_>>(),
        vec![addr(3), addr(2)],
        "the cap replaces the oldest"
    );
    h.advance(u).await;
    e.observe_endpoint(T, g.id, addr(2)).await?;
    ensure_eq!(
        e.endpoints(T, g.id).await?.first().map(|s| s.addr),
        Some(addr(2)),
        "an endpoint seen again is the most recent"
    );
    e.revoke(T, g.id).await?;
    ensure_eq!(e.endpoints(T, g.id).await, Err(Error::Revoked), "revoked");
    ensure_eq!(
        e.observe_endpoint(T, g.id, addr(4)).await,
        Err(Error::Revoked),
        "observed on a revoked lease"
    );
    let missing = LeaseId::from_bits(g.id.to_bits() + 999);
    ensure_eq!(
        e.endpoints(T, missing).await.map(drop),
        Err(Error::NotFound),
        "endpoints of a lease that never was"
    );
    Ok(())
}

pub(super) async fn ids_travel<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 100, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    let ticket = e.begin_join(T, "lobby", "c", u * 10, None).await?;
    let text: LeaseId =
        g.id.to_string()
            .parse()
            .map_err(|_| super::Fault::new("lease id text".into()))?;
    ensure_eq!(text, g.id, "a lease id through text");
    ensure_eq!(
        LeaseId::from_bytes(g.id.to_bytes()),
        g.id,
        "a lease id through bytes"
    );
    let attempt: AttemptId = ticket
        .attempt
        .to_string()
        .parse()
        .map_err(|_| super::Fault::new("attempt id text".into()))?;
    ensure_eq!(attempt, ticket.attempt, "an attempt id through text");
    let token = JoinToken::from_bytes(ticket.token.to_bytes());
    ensure_eq!(
        token.attempt(),
        ticket.attempt,
        "a token carries its attempt"
    );
    ensure_eq!(e.get_lease(T, text).await?.id, g.id, "a parsed id works");
    ensure!(
        "lease-zz".parse::<LeaseId>().is_err(),
        "garbage must not parse"
    );
    let addr = SocketAddr::from(([203, 0, 113, 7], 9));
    e.bind_endpoint(T, attempt, &token, addr).await?;
    e.consume(T, &token, None).await?;
    Ok(())
}

pub(super) async fn pages<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let mut live = Vec::new();
    for i in 0..7 {
        let g = e.grant(T, &format!("host-{i}"), u * 100, None).await?;
        live.push((g.id, format!("host-{i}")));
    }
    e.grant(TenantId(2), "neighbour", u * 100, None).await?;
    let short = e.grant(T, "short", u * 2, None).await?;
    let revoked = live.remove(3);
    e.revoke(T, revoked.0).await?;
    h.advance(u * 3).await;
    let _ = short;
    let mut seen = Vec::new();
    let mut cursor: Option<Cursor> = None;
    let mut pages = 0;
    loop {
        let page = e.list_leases(T, cursor.as_ref(), 2).await?;
        ensure!(page.items.len() <= 2, "a page of {}", page.items.len());
        for info in &page.items {
            ensure!(
                info.remaining > Duration::ZERO && info.remaining <= u * 100,
                "a listed lease's time left: {:?}",
                info.remaining
            );
            let got = e.get_lease(T, info.id).await?;
            ensure_eq!(
                (got.holder.as_str(), got.fence),
                (info.holder.as_str(), info.fence),
                "a listed lease reads back"
            );
            seen.push((info.id, info.holder.as_str().to_owned()));
        }
        pages += 1;
        ensure!(pages <= 100, "paging never ends");
        // The cursor travels to a client as text and comes back.
        cursor = page.next.map(|c| Cursor::from(c.to_string().as_str()));
        if cursor.is_none() {
            break;
        }
    }
    live.sort();
    seen.sort();
    ensure_eq!(
        seen,
        live,
        "every live lease exactly once (none revoked, expired or another tenant's)"
    );
    ensure_eq!(
        e.list_leases(T, None, 0).await.map(drop),
        Err(Error::InvalidArgument {
            reason: "limit must be in 1..=page_len_max"
        }),
        "a page of none"
    );
    ensure!(
        e.list_leases(TenantId(3), None, 10).await?.items.is_empty(),
        "a tenant with no leases"
    );
    Ok(())
}
