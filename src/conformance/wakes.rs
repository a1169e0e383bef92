//! Wake channels (SPEC §10): a notify wakes the listeners attached before
//! it, wakes coalesce, channels are per tenant, names are checked.

use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::error::Error;
use crate::base::ids::TenantId;
use crate::contract::engine::{WakeEngine, Wakes};
use crate::contract::wake::Wake;
use std::sync::Arc;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

pub(super) async fn notify_and_listen<H: Harness>(h: &H) -> Outcome
where
    H::Engine: WakeEngine,
{
    let e = h.engine(config(h.unit())).await?;
    let first = e.listen(T, "lobby").await?;
    let second = e.listen(T, "lobby").await?;
    let expected = Wake {
        tenant: T,
        channel: Arc::from("lobby"),
    };
    ensure!(first.try_recv().is_none(), "woken before any notify");
    for _ in 0..3 {
        e.notify(T, "lobby").await?;
    }
    ensure_eq!(first.recv().await, Ok(expected.clone()), "first listener");
    ensure_eq!(second.recv().await, Ok(expected.clone()), "second listener");
    ensure!(first.try_recv().is_none(), "three notifies gave two wakes");
    let late = e.listen(T, "lobby").await?;
    ensure!(
        late.try_recv().is_none(),
        "a listener saw an earlier notify"
    );
    e.notify(OTHER, "lobby").await?;
    e.notify(T, "lobby-2").await?;
    ensure!(
        first.try_recv().is_none(),
        "woken by another tenant's or another channel's notify"
    );
    e.notify(T, "lobby").await?;
    ensure_eq!(late.recv().await, Ok(expected), "a later notify");
    Ok(())
}

pub(super) async fn channel_names<H: Harness>(h: &H) -> Outcome
where
    H::Engine: WakeEngine,
{
    let e = h.engine(config(h.unit())).await?;
    for (name, want) in [("", Error::InvalidName), ("__x", Error::ReservedName)] {
        ensure_eq!(
            e.notify(T, name).await,
            Err(want.clone()),
            "notify {name:?}"
        );
        ensure_eq!(
            e.listen(T, name).await.map(drop),
            Err(want),
            "listen {name:?}"
        );
    }
    Ok(())
}
