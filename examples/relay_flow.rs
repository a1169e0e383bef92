//! A host and two clients through the relay flow, printing each outcome:
//! grant -> publish -> begin_join -> bind -> consume -> replay rejected ->
//! revoke cascades. Runs on a `ManualClock`, so its output is the same on
//! every run (except the random ids and tokens).
//!
//! ```text
//! cargo run --example relay_flow
//! ```

use relaystore::events::Received;
use relaystore::time::ManualClock;
use relaystore::{Store, StoreConfig, TenantId};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

fn main() -> Result<(), relaystore::Error> {
    let clock = Arc::new(ManualClock::new());
    let store = Store::new(StoreConfig::default(), clock.clone())?;
    let events = store.subscribe()?;
    let game = TenantId(42);

    let lease = store.grant(game, "host-eu-1", Duration::from_secs(30), Some("boot-1"))?;
    println!(
        "host   grant          -> {} fence {} version {}",
        lease.id, lease.fence, lease.version
    );
    let retry = store.grant(game, "host-eu-1", Duration::from_secs(30), Some("boot-1"))?;
    println!(
        "host   grant (retry)  -> same lease: {}",
        retry.id == lease.id
    );

    let listing = store.publish(game, lease.id, "lobby-ffa-7", b"mode=ffa;slots=8", None)?;
    println!(
        "host   publish        -> {:?} version {}",
        listing.key, listing.version
    );
    store.observe_endpoint(game, lease.id, "198.51.100.20:7777".parse().unwrap())?;

    let alice = store.begin_join(game, "lobby-ffa-7", "alice", Duration::from_secs(10), None)?;
    let bob = store.begin_join(game, "lobby-ffa-7", "bob", Duration::from_secs(10), None)?;
    println!(
        "alice  begin_join     -> {} token {:?}",
        alice.attempt, alice.token
    );
    println!("bob    begin_join     -> {}", bob.attempt);

    let alice_addr: SocketAddr = "203.0.113.5:51000".parse().unwrap();
    let bound = store.bind_endpoint(game, alice.attempt, &alice.token, alice_addr)?;
    println!(
        "relay  bind alice     -> {} version {}",
        bound.addr, bound.version
    );
    let other: SocketAddr = "203.0.113.99:1".parse().unwrap();
    println!(
        "relay  bind alice again from another address -> {:?}",
        store.bind_endpoint(game, alice.attempt, &alice.token, other)
    );

    let admitted = store.consume(game, &alice.token)?;
    println!(
        "host   consume alice  -> admitted {} from {}",
        admitted.client, admitted.addr
    );
    println!(
        "host   consume alice again -> {:?}",
        store.consume(game, &alice.token)
    );

    println!(
        "bob    consume before binding -> {:?}",
        store.consume(game, &bob.token)
    );

    clock.advance(Duration::from_secs(5));
    store.revoke(game, lease.id)?;
    println!("host   revoke lease   -> ok");
    println!(
        "anyone get listing    -> {:?}",
        store.get_listing(game, "lobby-ffa-7")
    );
    println!(
        "relay  bind bob       -> {:?}",
        store.bind_endpoint(
            game,
            bob.attempt,
            &bob.token,
            "203.0.113.6:52000".parse().unwrap()
        )
    );
    println!(
        "host   renew lease    -> {:?}",
        store.renew(game, lease.id, Duration::from_secs(30))
    );
    println!(
        "alice  replay token   -> {:?}",
        store.consume(game, &alice.token)
    );

    println!("removal events:");
    for received in events.drain() {
        match received {
            Received::Event(e) => println!("  {:?} {:?} {:?}", e.collection, e.id, e.cause),
            Received::Lagged { missed } => println!("  (missed {missed})"),
        }
    }
    println!("stats: {:?}", store.stats());
    Ok(())
}
