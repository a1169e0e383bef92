//! Wake channels (SPEC §10): a notify wakes the listeners attached before
//! it, once each, with its payload; a full queue drops its oldest wakes and
//! counts them; channels are per tenant; names and payloads are checked;
//! a handle that stops closes its listeners.

use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::error::Error;
use crate::base::ids::TenantId;
use crate::contract::engine::{RelayEngine, WakeEngine, Wakes};
use crate::contract::events::RecvError;
use crate::contract::wake::{Missed, Wake};

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

pub(super) async fn notify_and_listen<H: Harness>(h: &H) -> Outcome
where
    H::Engine: WakeEngine,
{
    let e = h.engine(config(h.unit())).await?;
    let first = e.listen(T, "lobby").await?;
    let second = e.listen(T, "lobby").await?;
    let bare = Wake::new(T, "lobby");
    ensure!(first.try_recv().is_none(), "woken before any notify");
    e.notify(T, "lobby").await?;
    e.notify_with(T, "lobby", b"seat 4").await?;
    e.notify(T, "lobby").await?;
    let sent = [
        bare.clone(),
        bare.clone().with_payload(b"seat 4"),
        bare.clone(),
    ];
    for (i, want) in sent.iter().enumerate() {
        ensure_eq!(
            first.recv().await,
            Ok(want.clone()),
            "first listener, wake {i}"
        );
    }
    for (i, want) in sent.iter().enumerate() {
        ensure_eq!(
            second.try_recv(),
            Some(want.clone()),
            "second listener, wake {i}"
        );
    }
    ensure!(
        first.try_recv().is_none(),
        "three notifies gave more than three wakes"
    );
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
    ensure_eq!(late.recv().await, Ok(bare), "a later notify");
    Ok(())
}

pub(super) async fn channel_names<H: Harness>(h: &H) -> Outcome
where
    H::Engine: WakeEngine,
{
    let e = h.engine(config(h.unit()).wake_payload_bytes_max(4)).await?;
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
    let listener = e.listen(T, "lobby").await?;
    ensure!(
        matches!(
            e.notify_with(T, "lobby", b"12345").await,
            Err(Error::InvalidArgument { reason }) if reason.contains("wake_payload_bytes_max")
        ),
        "a payload over wake_payload_bytes_max"
    );
    ensure!(
        listener.try_recv().is_none(),
        "a refused notify woke a listener"
    );
    e.notify_with(T, "lobby", b"1234").await?;
    ensure_eq!(
        listener.try_recv(),
        Some(Wake::new(T, "lobby").with_payload(b"1234")),
        "a payload of wake_payload_bytes_max"
    );
    Ok(())
}

/// A listener that does not keep up holds its newest `wake_queue_max`
/// wakes; the oldest of them counts what was dropped before it.
pub(super) async fn a_full_queue_drops_the_oldest<H: Harness>(h: &H) -> Outcome
where
    H::Engine: WakeEngine,
{
    let e = h.engine(config(h.unit()).wake_queue_max(3)).await?;
    let slow = e.listen(T, "lobby").await?;
    for i in 0..8u8 {
        e.notify_with(T, "lobby", &[i]).await?;
    }
    let wake = |i: u8| Wake::new(T, "lobby").with_payload(&[i]);
    ensure_eq!(
        slow.try_recv(),
        Some(wake(5).with_missed(Missed::Dropped(5))),
        "the oldest wake kept, with the five dropped before it"
    );
    ensure_eq!(slow.try_recv(), Some(wake(6)), "the next");
    e.notify_with(T, "lobby", &[8]).await?;
    ensure_eq!(slow.try_recv(), Some(wake(7)), "the newest before");
    ensure_eq!(slow.try_recv(), Some(wake(8)), "one queued after a read");
    ensure!(slow.try_recv().is_none(), "more wakes than notifies");
    Ok(())
}

/// A drained handle stops taking notifies, so its listeners receive what
/// is queued and then `Closed`: a worker waiting on one does not wait
/// forever.
pub(super) async fn drained_closes_listeners<H: Harness>(h: &H) -> Outcome
where
    H::Engine: WakeEngine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let listener = e.listen(T, "lobby").await?;
    e.notify_with(T, "lobby", b"last").await?;
    RelayEngine::begin_drain(&e, u * 2).await?;
    h.advance(u * 3).await;
    e.drained().await;
    ensure_eq!(
        listener.recv().await,
        Ok(Wake::new(T, "lobby").with_payload(b"last")),
        "the wake queued before the drain ended"
    );
    ensure_eq!(
        listener.recv().await,
        Err(RecvError::Closed),
        "a listener of a stopped handle"
    );
    ensure_eq!(
        e.notify(T, "lobby").await,
        Err(Error::STOPPED),
        "a notify once stopped"
    );
    Ok(())
}
