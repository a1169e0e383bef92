//! Named locks (SPEC §4): exclusive, fenced, lapsing, attachable.

use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::error::Error;
use crate::base::ids::TenantId;
use crate::contract::engine::RelayEngine;

const T: TenantId = TenantId(1);

pub(super) async fn exclusive_and_fenced<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let a = e
        .try_lock(T, "job", "a", u * 10, None)
        .await?
        .ok_or_else(|| super::Fault::new("a free lock was not taken".into()))?;
    ensure_eq!((a.holder.as_ref(), a.remaining), ("a", u * 10), "taken");
    ensure_eq!(
        e.try_lock(T, "job", "b", u * 10, None).await,
        Ok(None),
        "held by another"
    );
    ensure_eq!(e.get_lock(T, "job").await?.fence, a.fence, "get_lock");
    let r = e.renew_lock(T, "job", a.fence, u * 2).await?;
    ensure_eq!(r.remaining, u * 2, "a lock renewal is an absolute reset");
    h.advance(u * 3).await;
    ensure!(
        matches!(
            e.get_lock(T, "job").await,
            Err(Error::NotFound | Error::Expired)
        ),
        "a lapsed lock is still held"
    );
    let b = e
        .try_lock(T, "job", "b", u * 10, None)
        .await?
        .ok_or_else(|| super::Fault::new("a lapsed lock was not taken".into()))?;
    ensure!(b.fence > a.fence, "fences {} then {}", a.fence, b.fence);
    ensure_eq!(
        e.renew_lock(T, "job", a.fence, u).await.map(drop),
        Err(Error::Expired),
        "renewal by the lapsed holder"
    );
    e.release_lock(T, "job", a.fence).await?;
    ensure_eq!(
        e.get_lock(T, "job").await?.holder.as_ref(),
        "b",
        "a stale release released the new holder"
    );
    e.release_lock(T, "job", b.fence).await?;
    e.release_lock(T, "job", b.fence).await?;
    ensure_eq!(e.get_lock(T, "job").await, Err(Error::NotFound), "released");
    ensure_eq!(
        e.renew_lock(T, "job", b.fence, u).await.map(drop),
        Err(Error::NotFound),
        "renewal of a released lock"
    );
    let c = e.try_lock(T, "job", "c", u * 10, None).await?;
    ensure!(
        c.is_some_and(|c| c.fence > b.fence),
        "retaken with a higher fence"
    );
    Ok(())
}

pub(super) async fn attached_to_a_lease<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let g = e.grant(T, "host", u * 100, None).await?;
    let lock = e.try_lock(T, "job", "a", u * 50, Some(g.id)).await?;
    ensure!(lock.is_some(), "taken under a lease");
    e.revoke(T, g.id).await?;
    ensure_eq!(
        e.get_lock(T, "job").await,
        Err(Error::NotFound),
        "a lock outlived its lease"
    );
    ensure!(
        e.try_lock(T, "job", "b", u * 10, None).await?.is_some(),
        "free again after the cascade"
    );
    // A lock on a lease that expires goes with it, and none can be taken
    // on it afterwards.
    let short = e.grant(T, "host", u * 2, None).await?;
    let on_short = e.try_lock(T, "brief", "a", u * 50, Some(short.id)).await?;
    ensure!(on_short.is_some(), "taken under a short lease");
    h.advance(u * 3).await;
    ensure_eq!(
        e.get_lock(T, "brief").await.map(drop),
        Err(Error::NotFound),
        "a lock outlived its expired lease"
    );
    ensure!(
        e.try_lock(T, "brief", "b", u * 10, None).await?.is_some(),
        "free again after its lease expired"
    );
    ensure!(
        matches!(
            e.try_lock(T, "other", "a", u * 10, Some(short.id)).await,
            Err(Error::Expired | Error::NotFound)
        ),
        "a lock taken on an expired lease"
    );
    Ok(())
}
