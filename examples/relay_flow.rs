//! A host and two clients through the relay flow, printing each outcome:
//! grant -> publish -> begin_join -> bind -> consume -> replay rejected ->
//! revoke cascades. The flow is written once against the engine contract
//! (`relay_flow<E: Engine>`) and run here on the in-memory engine, on a
//! `ManualClock`, so its output is the same on every run (except the random
//! ids and tokens). Another engine runs the same function unchanged.
//!
//! ```text
//! cargo run --example relay_flow
//! ```

use relaystore::events::Received;
use relaystore::time::ManualClock;
use relaystore::{Engine, Events, Store, StoreConfig, TenantId};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

fn main() -> Result<(), relaystore::Error> {
    let clock = Arc::new(ManualClock::new());
    let store = Store::builder()
        .config(StoreConfig::default())
        .clock(clock.clone())
        .without_expiry_driver()
        .build()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    // The store as the contract's in-memory engine: the same records.
    let engine = store.engine();
    runtime.block_on(relay_flow(&engine, || {
        clock.advance(Duration::from_secs(5))
    }))?;
    println!("stats: {:?}", store.stats());
    Ok(())
}

/// The relay's side of one session, on any engine; `later` lets some time
/// pass before the host revokes.
async fn relay_flow<E: Engine>(store: &E, later: impl Fn()) -> Result<(), relaystore::Error> {
    let events = store.subscribe().await?;
    let game = TenantId(42);

    let lease = store
        .grant(game, "host-eu-1", Duration::from_secs(30), Some("boot-1"))
        .await?;
    println!(
        "host   grant          -> {} fence {} version {}",
        lease.id, lease.fence, lease.version
    );
    let retry = store
        .grant(game, "host-eu-1", Duration::from_secs(30), Some("boot-1"))
        .await?;
    println!(
        "host   grant (retry)  -> same lease: {}",
        retry.id == lease.id
    );

    let listing = store
        .publish(game, lease.id, "lobby-ffa-7", b"mode=ffa;slots=8", None)
        .await?;
    println!(
        "host   publish        -> {:?} version {}",
        listing.key, listing.version
    );
    store
        .observe_endpoint(game, lease.id, "198.51.100.20:7777".parse().unwrap())
        .await?;

    let alice = store
        .begin_join(game, "lobby-ffa-7", "alice", Duration::from_secs(10), None)
        .await?;
    let bob = store
        .begin_join(game, "lobby-ffa-7", "bob", Duration::from_secs(10), None)
        .await?;
    println!(
        "alice  begin_join     -> {} token {:?}",
        alice.attempt, alice.token
    );
    println!("bob    begin_join     -> {}", bob.attempt);

    let alice_addr: SocketAddr = "203.0.113.5:51000".parse().unwrap();
    let bound = store
        .bind_endpoint(game, alice.attempt, &alice.token, alice_addr)
        .await?;
    println!(
        "relay  bind alice     -> {} version {}",
        bound.addr, bound.version
    );
    let other: SocketAddr = "203.0.113.99:1".parse().unwrap();
    println!(
        "relay  bind alice again from another address -> {:?}",
        store
            .bind_endpoint(game, alice.attempt, &alice.token, other)
            .await
    );

    let admitted = store.consume(game, &alice.token, None).await?;
    println!(
        "host   consume alice  -> admitted {} from {}",
        admitted.client, admitted.addr
    );
    println!(
        "host   consume alice again -> {:?}",
        store.consume(game, &alice.token, None).await
    );

    println!(
        "bob    consume before binding -> {:?}",
        store.consume(game, &bob.token, None).await
    );

    later();
    store.revoke(game, lease.id).await?;
    println!("host   revoke lease   -> ok");
    println!(
        "anyone get listing    -> {:?}",
        store.get_listing(game, "lobby-ffa-7").await
    );
    println!(
        "relay  bind bob       -> {:?}",
        store
            .bind_endpoint(
                game,
                bob.attempt,
                &bob.token,
                "203.0.113.6:52000".parse().unwrap()
            )
            .await
    );
    println!(
        "host   renew lease    -> {:?}",
        store.renew(game, lease.id, Duration::from_secs(30)).await
    );
    println!(
        "alice  replay token   -> {:?}",
        store.consume(game, &alice.token, None).await
    );

    println!("removal events:");
    while let Some(received) = events.try_recv() {
        match received {
            Received::Event(e) => println!("  {:?} {:?} {:?}", e.collection, e.id, e.cause),
            Received::Lagged { missed, .. } => println!("  (missed {missed})"),
        }
    }
    Ok(())
}
