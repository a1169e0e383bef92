//! Wake channels on the Redis engine, across instances (a standalone
//! server and a Redis Cluster): a notify on one handle wakes the listeners
//! attached before it on every handle, once each, with its payload;
//! tenants and channels are apart; names and payloads are checked. (A listener whose Pub/Sub
//! connection drops is in `redis_faults.rs`.)

mod redis;

use redis::{config, instances, on_every_target};
use relaystore::wake::Wake;
use relaystore::{Error, TenantId};
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
/// How long a published wake may take to reach another handle here.
const SETTLE: Duration = Duration::from_millis(300);

fn wake(tenant: TenantId, channel: &str) -> Wake {
    Wake::new(tenant, channel)
}

#[test]
fn a_notify_on_one_instance_wakes_listeners_on_every_instance() {
    on_every_target("wakes-across", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (&engines[0], &engines[1]);
        let local = a.listen(T, "lobby").await.unwrap();
        let remote = b.listen(T, "lobby").await.unwrap();
        let elsewhere = b.listen(T, "lobby-2").await.unwrap();
        let neighbour = b.listen(OTHER, "lobby").await.unwrap();
        assert!(
            remote.try_recv().is_none(),
            "{name}: woken before any notify"
        );
        for i in 0..3u8 {
            a.notify_with(T, "lobby", &[i]).await.unwrap();
        }
        // The notifying handle's own listener has its wakes at once, in
        // order.
        for i in 0..3u8 {
            let own = wake(T, "lobby").with_payload(&[i]);
            assert_eq!(local.try_recv(), Some(own), "{name}");
        }
        // The other instance's listener has one wake per notify, each
        // with its payload (on a cluster they may travel through different
        // nodes, so their order there is not asserted).
        tokio::time::sleep(SETTLE).await;
        let mut payloads = Vec::new();
        while let Some(w) = remote.try_recv() {
            assert_eq!((w.tenant, &*w.channel), (T, "lobby"), "{name}");
            assert_eq!(w.missed, relaystore::wake::Missed::None, "{name}");
            payloads.extend_from_slice(&w.payload);
        }
        payloads.sort_unstable();
        assert_eq!(
            payloads,
            [0, 1, 2],
            "{name}: the other instance's listener, one wake per notify"
        );
        // And no second wake for the local listener from its own handle's
        // message coming back.
        assert!(
            local.try_recv().is_none(),
            "{name}: the local listener was woken twice"
        );
        assert!(
            elsewhere.try_recv().is_none(),
            "{name}: another channel was woken"
        );
        assert!(
            neighbour.try_recv().is_none(),
            "{name}: another tenant was woken"
        );
        // A listener attached after a notify sees only later ones.
        let late = a.listen(T, "lobby").await.unwrap();
        tokio::time::sleep(SETTLE).await;
        assert!(
            late.try_recv().is_none(),
            "{name}: a late listener saw an earlier notify"
        );
        b.notify(T, "lobby").await.unwrap();
        let got = tokio::time::timeout(SETTLE * 10, late.recv())
            .await
            .unwrap_or_else(|_| panic!("{name}: a later notify from the other instance"));
        assert_eq!(got, Ok(wake(T, "lobby")), "{name}");
    });
}

#[test]
fn channel_names_are_checked() {
    on_every_target("wakes-names", |target, name| async move {
        let e = &instances(&target, &name, 1, config()).await[0];
        for (channel, want) in [("", Error::InvalidName), ("__x", Error::ReservedName)] {
            assert_eq!(e.notify(T, channel).await, Err(want.clone()), "{name}");
            assert_eq!(e.listen(T, channel).await.map(drop), Err(want), "{name}");
        }
        let long = "x".repeat(config().name_bytes_max + 1);
        assert!(matches!(
            e.notify(T, &long).await,
            Err(Error::InvalidArgument { .. })
        ));
        let big = vec![0u8; config().wake_payload_bytes_max + 1];
        assert!(
            matches!(
                e.notify_with(T, "lobby", &big).await,
                Err(Error::InvalidArgument { reason }) if reason.contains("wake_payload_bytes_max")
            ),
            "{name}"
        );
    });
}

#[test]
fn listeners_are_capped_per_handle() {
    on_every_target("wakes-caps", |target, name| async move {
        let limits = config().listeners_per_channel_max(2);
        let e = &instances(&target, &name, 1, limits).await[0];
        let _one = e.listen(T, "lobby").await.unwrap();
        let _two = e.listen(T, "lobby").await.unwrap();
        assert!(
            matches!(
                e.listen(T, "lobby").await,
                Err(Error::CapacityExceeded {
                    scope: relaystore::Scope::ChannelListeners,
                    ..
                })
            ),
            "{name}"
        );
        drop(_one);
        e.listen(T, "lobby").await.unwrap();
    });
}
