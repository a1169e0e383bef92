//! Listings and presence (SPEC §4): publish, update, unpublish, pages,
//! visibility under the lease; heartbeat, get, list, leave.

use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::error::{ConflictReason, Error};
use crate::base::ids::TenantId;
use crate::contract::engine::RelayEngine;
use crate::contract::relay::Cursor;

const T: TenantId = TenantId(1);

pub(super) async fn publish_update_unpublish<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 100, None).await?;
    let l = e.publish(T, g.id, "lobby", b"mode=ffa", None).await?;
    ensure_eq!(
        (l.key.as_ref(), l.lease, l.attrs.as_ref()),
        ("lobby", g.id, &b"mode=ffa"[..]),
        "publish"
    );
    ensure!(
        matches!(
            e.publish(T, g.id, "lobby", b"", None).await,
            Err(Error::Conflict {
                reason: ConflictReason::NameTaken,
                ..
            })
        ),
        "a live key cannot be published twice"
    );
    let v2 = e
        .update_listing(T, "lobby", l.version, b"mode=duel")
        .await?;
    ensure!(v2 > l.version, "update moves the version");
    ensure_eq!(
        e.update_listing(T, "lobby", l.version, b"x").await,
        Err(Error::conflict(ConflictReason::Version, v2)),
        "update at a stale version"
    );
    let now = e.get_listing(T, "lobby").await?;
    ensure_eq!(
        (now.version, now.attrs.as_ref()),
        (v2, &b"mode=duel"[..]),
        "get after update"
    );
    // A listing lives as long as its lease: its time left is the lease's.
    ensure!(
        l.remaining <= u * 100 && l.remaining > u * 90,
        "a new listing's time left: {:?} under a lease of {:?}",
        l.remaining,
        u * 100
    );
    h.advance(u * 15).await;
    let later = e.get_listing(T, "lobby").await?;
    let lease = e.get_lease(T, g.id).await?;
    ensure!(
        later.remaining <= u * 85 && later.remaining > u * 75,
        "a listing's time left after 15 of 100 units: {:?}",
        later.remaining
    );
    ensure!(
        later.remaining.abs_diff(lease.remaining) < u,
        "a listing's time left {:?} is its lease's {:?}",
        later.remaining,
        lease.remaining
    );
    e.renew(T, g.id, u * 100).await?;
    let paged = e.list_listings(T, None, 10).await?;
    ensure!(
        paged.items.len() == 1 && paged.items[0].remaining > u * 90,
        "a page shows the renewed lease's time left: {:?}",
        paged.items
    );
    ensure_eq!(
        e.unpublish(T, "lobby", Some(l.version)).await,
        Err(Error::conflict(ConflictReason::Version, v2)),
        "unpublish at a stale version"
    );
    e.unpublish(T, "lobby", Some(v2)).await?;
    ensure_eq!(
        e.get_listing(T, "lobby").await,
        Err(Error::NotFound),
        "gone"
    );
    let again = e.publish(T, g.id, "lobby", b"", None).await?;
    ensure!(again.version > v2, "a recreated key never reuses a version");
    e.revoke_listing(T, "lobby").await?;
    ensure_eq!(
        e.get_listing(T, "lobby").await,
        Err(Error::NotFound),
        "revoked listing"
    );
    ensure_eq!(
        e.unpublish(T, "lobby", None).await,
        Err(Error::NotFound),
        "unpublish of a missing key"
    );
    ensure_eq!(
        e.revoke_listing(T, "lobby").await,
        Ok(()),
        "revoke_listing is idempotent"
    );
    Ok(())
}

pub(super) async fn visible_only_under_a_live_lease<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 2, None).await?;
    e.publish(T, g.id, "lobby", b"", None).await?;
    h.advance(u * 3).await;
    ensure!(
        matches!(
            e.get_listing(T, "lobby").await,
            Err(Error::NotFound | Error::Expired)
        ),
        "a listing outlived its lease"
    );
    let page = e.list_listings(T, None, 10).await?;
    ensure!(
        page.items.is_empty(),
        "listed after expiry: {:?}",
        page.items
    );
    let revoked = e.grant(T, "host", u * 100, None).await?;
    e.revoke(T, revoked.id).await?;
    ensure_eq!(
        e.publish(T, revoked.id, "x", b"", None).await.map(drop),
        Err(Error::Revoked),
        "publish under a revoked lease"
    );
    Ok(())
}

pub(super) async fn pages<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let mut keys = Vec::new();
    for lease in 0..3 {
        let g = e.grant(T, "host", u * 100, None).await?;
        for i in 0..3 {
            let key = format!("room-{lease}-{i}");
            e.publish(T, g.id, &key, b"", None).await?;
            keys.push(key);
        }
    }
    let mut seen = Vec::new();
    let mut cursor: Option<Cursor> = None;
    for _ in 0..10 {
        let page = e.list_listings(T, cursor.as_ref(), 4).await?;
        ensure!(page.items.len() <= 4, "page of {}", page.items.len());
        seen.extend(page.items.iter().map(|l| l.key.to_string()));
        // The cursor travels to a client as text and comes back.
        cursor = page.next.map(|c| Cursor::from(c.to_string().as_str()));
        if cursor.is_none() {
            break;
        }
    }
    keys.sort();
    seen.sort();
    ensure_eq!(seen, keys, "every listing exactly once");
    ensure!(
        e.list_listings(TenantId(2), None, 4)
            .await?
            .items
            .is_empty(),
        "another tenant's listings are not listed"
    );
    Ok(())
}

pub(super) async fn presence<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let first = e
        .heartbeat(T, "alice", u * 5, Some(b"online"), None)
        .await?;
    ensure_eq!(first.remaining, u * 5, "first heartbeat");
    let second = e.heartbeat(T, "alice", u * 8, None, None).await?;
    ensure!(
        second.version > first.version,
        "a refresh moves the version"
    );
    let info = e.get_presence(T, "alice").await?;
    ensure_eq!(
        (info.member.as_ref(), info.attrs.as_ref(), info.lease),
        ("alice", &b"online"[..], None),
        "attrs are kept when not given"
    );
    e.heartbeat(T, "bob", u * 5, None, None).await?;
    let listed = e.list_presence(T, None, 10).await?;
    // In the engine's order for the scan, which is not the names' in
    // memory.
    let mut members: Vec<&str> = listed.items.iter().map(|p| p.member.as_ref()).collect();
    members.sort_unstable();
    ensure_eq!(members, vec!["alice", "bob"], "list");
    e.leave(T, "bob").await?;
    ensure_eq!(e.get_presence(T, "bob").await, Err(Error::NotFound), "left");
    ensure_eq!(e.leave(T, "bob").await, Err(Error::NotFound), "leave twice");
    h.advance(u * 9).await;
    ensure!(
        matches!(
            e.get_presence(T, "alice").await,
            Err(Error::NotFound | Error::Expired)
        ),
        "presence outlived its TTL"
    );
    let g = e.grant(T, "host", u * 100, None).await?;
    e.heartbeat(T, "carol", u * 50, None, Some(g.id)).await?;
    ensure_eq!(
        e.get_presence(T, "carol").await?.lease,
        Some(g.id),
        "attached"
    );
    let g2 = e.grant(T, "host", u * 100, None).await?;
    ensure!(
        matches!(
            e.heartbeat(T, "carol", u * 50, None, Some(g2.id)).await,
            Err(Error::Conflict {
                reason: ConflictReason::OtherLease,
                ..
            })
        ),
        "another lease took an attached member"
    );
    e.revoke(T, g.id).await?;
    ensure_eq!(
        e.get_presence(T, "carol").await,
        Err(Error::NotFound),
        "presence attached to a revoked lease"
    );
    e.heartbeat(T, "carol", u * 50, None, Some(g2.id)).await?;
    ensure_eq!(
        e.get_presence(T, "carol").await?.lease,
        Some(g2.id),
        "the member under another lease once its lease is gone"
    );
    Ok(())
}
