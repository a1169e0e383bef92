//! The relay's protocol, exchange by exchange, against a relay in this
//! process on a manual clock: credentials and nonces, allocation mismatch,
//! the per-user quota and its release by expiry, a full relay, permission
//! filtering and expiry on the datagram path, channels (re-binds, the whole
//! 0x4000–0x7FFF range, conflicts), deletion by Refresh, and EVEN-PORT with
//! a reservation token.

use relaystore::time::ManualClock;
use relaystore::{Store, StoreConfig};
use relaystore_turn::{state, Config, Counters, Records, Relay};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use stun_types::attribute::{AttributeStaticType, Fingerprint, Nonce, Realm, XorMappedAddress};
use stun_types::message::{
    LongTermKeyCredentials, Message, MessageWriteExt, MessageWriteVec, TransactionId, BINDING,
};
use turn_types::attribute::{
    Data, EvenPort, Lifetime, RequestedTransport, ReservationToken, XorPeerAddress,
};
use turn_types::message::{ALLOCATE, DATA, REFRESH};

mod client;

use client::{
    error_code, peer_socket, send_indication, success, Attrs, Client, RelayThread, REALM,
};

/// A relay on its own thread, with its store and the store's clock.
struct Running {
    relay: RelayThread,
    clock: Arc<ManualClock>,
    store: Store,
}

impl std::ops::Deref for Running {
    type Target = RelayThread;

    fn deref(&self) -> &RelayThread {
        &self.relay
    }
}

fn config() -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        relay_ip: "127.0.0.1".parse().unwrap(),
        min_port: 41000,
        max_port: 44999,
        realm: REALM.to_string(),
        users: vec![
            ("alice".to_string(), "secret".to_string()),
            ("bob".to_string(), "hunter2".to_string()),
        ],
        ..Config::default()
    }
}

fn start(config: Config) -> Running {
    start_with(config, |store| store)
}

/// A relay whose store settings `adjust` changes.
fn start_with(config: Config, adjust: fn(StoreConfig) -> StoreConfig) -> Running {
    let clock = Arc::new(ManualClock::new());
    let store = Store::builder()
        .config(adjust(state::store_config(&config)))
        .clock(clock.clone())
        .without_expiry_driver()
        .build()
        .unwrap();
    let relay = Relay::bind(config, Records::Memory(store.clone())).unwrap();
    Running {
        relay: RelayThread::spawn(relay, || {}),
        clock,
        store,
    }
}

impl Running {
    fn counters(&self) -> &Counters {
        &self.handle.counters
    }
}

#[test]
fn credentials_are_challenged_checked_and_signed() {
    let relay = start(config());
    let mut client = Client::new(relay.handle.local_addr, "alice", "wrong");
    let first = client.send(ALLOCATE, TransactionId::generate(), &|w, _| {
        w.add_attribute(&RequestedTransport::new(17)).unwrap();
    });
    assert_eq!(error_code(&first), Some(401));
    let msg = Message::from_bytes(&first).unwrap();
    assert_eq!(msg.attribute::<Realm>().unwrap().realm(), REALM);
    assert!(msg.has_attribute(Fingerprint::TYPE));
    client.nonce = Some(msg.attribute::<Nonce>().unwrap().nonce().to_string());
    let wrong = client.send(ALLOCATE, TransactionId::generate(), &|w, _| {
        w.add_attribute(&RequestedTransport::new(17)).unwrap();
    });
    assert_eq!(error_code(&wrong), Some(401), "a wrong password");
    client.password = "secret".to_string();
    let answer = client.allocate();
    let msg = Message::from_bytes(&answer).unwrap();
    assert!(success(&answer));
    let creds = LongTermKeyCredentials::new("alice".into(), "secret".into(), REALM.into());
    msg.validate_integrity(&creds.into())
        .expect("a success answer carries MESSAGE-INTEGRITY under the user's key");
    assert!(msg.has_attribute(Fingerprint::TYPE));
    assert_eq!(msg.attribute::<Lifetime>().unwrap().seconds(), 600);
    let mapped = msg.attribute::<XorMappedAddress>().unwrap();
    assert_eq!(mapped.addr(msg.transaction_id()), client.local());
    // A Binding request needs no credentials.
    let mut plain = Client::new(relay.handle.local_addr, "", "");
    let binding = plain.send(BINDING, TransactionId::generate(), &|_, _| {});
    assert!(success(&binding));
}

#[test]
fn an_expired_nonce_gets_438_and_a_fresh_one() {
    let relay = start(config());
    let mut client = Client::new(relay.handle.local_addr, "alice", "secret");
    assert!(success(&client.allocate()));
    let old = client.nonce.clone().unwrap();
    relay.clock.advance(Duration::from_secs(601));
    let answer = client.send(REFRESH, TransactionId::generate(), &|_, _| {});
    assert_eq!(error_code(&answer), Some(438));
    let fresh = Message::from_bytes(&answer).unwrap();
    let fresh = fresh.attribute::<Nonce>().unwrap().nonce().to_string();
    assert_ne!(fresh, old);
    // The allocation (600 s) expired with the nonce: a Refresh with the
    // fresh nonce finds no allocation.
    client.nonce = Some(fresh);
    let answer = client.send(REFRESH, TransactionId::generate(), &|_, _| {});
    assert_eq!(error_code(&answer), Some(437));
}

#[test]
fn a_second_allocate_is_437_and_a_retransmission_gets_the_first_answer() {
    let relay = start(config());
    let mut client = Client::new(relay.handle.local_addr, "alice", "secret");
    assert!(success(&client.allocate()));
    let id = TransactionId::generate();
    let attrs: Attrs = &|w, _| {
        w.add_attribute(&RequestedTransport::new(17)).unwrap();
    };
    let mut fresh = Client::new(relay.handle.local_addr, "alice", "secret");
    fresh.nonce = client.nonce.clone();
    let first = fresh.send(ALLOCATE, id, attrs);
    let again = fresh.send(ALLOCATE, id, attrs);
    assert_eq!(Client::relayed(&first), Client::relayed(&again));
    let other = fresh.send(ALLOCATE, TransactionId::generate(), attrs);
    assert_eq!(error_code(&other), Some(437));
    assert_eq!(relay.counters().allocations.load(Ordering::Relaxed), 2);
}

#[test]
fn the_user_quota_answers_486_until_an_allocation_expires() {
    let relay = start(Config {
        allocations_per_user: 2,
        ..config()
    });
    let mut clients: Vec<Client> = (0..3)
        .map(|_| Client::new(relay.handle.local_addr, "alice", "secret"))
        .collect();
    assert!(success(&clients[0].allocate()));
    assert!(success(&clients[1].allocate()));
    assert_eq!(error_code(&clients[2].allocate()), Some(486));
    // Another user is not held back by alice's quota.
    let mut bob = Client::new(relay.handle.local_addr, "bob", "hunter2");
    assert!(success(&bob.allocate()));
    // The first two expire (600 s); the store frees the quota.
    relay.clock.advance(Duration::from_secs(601));
    relay.store.sweep();
    relay.wait_for(|c| &c.closed, 3);
    assert!(success(&clients[2].allocate()));
}

#[test]
fn a_full_relay_answers_508() {
    let relay = start(Config {
        allocations_max: 1,
        ..config()
    });
    let mut alice = Client::new(relay.handle.local_addr, "alice", "secret");
    let mut bob = Client::new(relay.handle.local_addr, "bob", "hunter2");
    assert!(success(&alice.allocate()));
    assert_eq!(error_code(&bob.allocate()), Some(508));
}

/// Each record kind the relay declares has its own per-allocation cap:
/// permissions fill theirs (508 for one more) while a channel binding
/// still fits, and a refreshed permission takes no new room.
#[test]
fn an_allocation_full_of_permissions_answers_508() {
    let relay = start(Config {
        children_per_allocation: 2,
        ..config()
    });
    let mut client = Client::new(relay.handle.local_addr, "alice", "secret");
    assert!(success(&client.allocate()));
    let peer = |last: u8| SocketAddr::from(([192, 0, 2, last], 9));
    assert!(success(&client.permit(peer(1))));
    assert!(success(&client.permit(peer(2))));
    assert_eq!(error_code(&client.permit(peer(3))), Some(508));
    assert!(success(&client.permit(peer(2))), "a refresh");
    assert!(success(&client.bind(0x4000, peer(1))));
}

#[test]
fn datagrams_pass_only_under_a_live_permission() {
    let relay = start(config());
    let peer = peer_socket();
    let mut client = Client::new(relay.handle.local_addr, "alice", "secret");
    let relayed = Client::relayed(&client.allocate());
    // Without a permission the peer's datagram is dropped.
    peer.send_to(b"early", relayed).unwrap();
    relay.wait_for(|c| &c.dropped, 1);
    assert!(success(&client.permit(peer.local_addr().unwrap())));
    // Peer to client: a Data indication naming the peer.
    peer.send_to(b"hello client", relayed).unwrap();
    let data = client.receive();
    let msg = Message::from_bytes(&data).unwrap();
    assert!(msg.has_method(DATA));
    assert_eq!(msg.attribute::<Data>().unwrap().data(), b"hello client");
    let from = msg.attribute::<XorPeerAddress>().unwrap();
    assert_eq!(from.addr(msg.transaction_id()), peer.local_addr().unwrap());
    assert!(msg.has_attribute(Fingerprint::TYPE));
    // Client to peer: a Send indication.
    let send = send_indication(peer.local_addr().unwrap(), b"hello peer");
    client.socket.send_to(&send, client.server).unwrap();
    let mut buf = [0u8; 64];
    let (n, source) = peer.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"hello peer");
    assert_eq!(source, relayed);
    // 300 s later the permission is over, though no sweep has run: the
    // store never shows a record past its deadline.
    relay.clock.advance(Duration::from_secs(300));
    let dropped = relay.counters().dropped.load(Ordering::Relaxed);
    peer.send_to(b"late", relayed).unwrap();
    relay.wait_for(|c| &c.dropped, dropped + 1);
    client.socket.send_to(&send, client.server).unwrap();
    relay.wait_for(|c| &c.dropped, dropped + 2);
    assert_eq!(relay.counters().to_peers.load(Ordering::Relaxed), 1);
    assert_eq!(relay.counters().to_clients.load(Ordering::Relaxed), 1);
}

#[test]
fn channels_relay_both_ways_and_refuse_conflicting_binds() {
    let relay = start(config());
    let peer = peer_socket();
    let other = peer_socket();
    let mut client = Client::new(relay.handle.local_addr, "alice", "secret");
    let relayed = Client::relayed(&client.allocate());
    let to = peer.local_addr().unwrap();
    // Above RFC 8656's 0x4FFF: clients pick from RFC 5766's whole range.
    assert!(success(&client.bind(0x7FFF, to)));
    assert!(success(&client.bind(0x7FFF, to)), "a re-bind refreshes");
    assert_eq!(
        error_code(&client.bind(0x4001, to)),
        Some(400),
        "peer taken"
    );
    let elsewhere = other.local_addr().unwrap();
    assert_eq!(
        error_code(&client.bind(0x7FFF, elsewhere)),
        Some(400),
        "channel taken"
    );
    assert_eq!(
        error_code(&client.bind(0x3FFF, elsewhere)),
        Some(400),
        "out of range"
    );
    assert!(success(&client.bind(0x4000, elsewhere)));
    // Client to peer as ChannelData (the bind installed the permission).
    let mut frame = vec![0x7F, 0xFF, 0, 3];
    frame.extend_from_slice(b"abc");
    client.socket.send_to(&frame, client.server).unwrap();
    let mut buf = [0u8; 64];
    let (n, source) = peer.recv_from(&mut buf).unwrap();
    assert_eq!((&buf[..n], source), (&b"abc"[..], relayed));
    // Peer to client as ChannelData on the peer's channel.
    peer.send_to(b"xyz", relayed).unwrap();
    assert_eq!(client.receive(), [0x7F, 0xFF, 0, 3, b'x', b'y', b'z']);
    // 600 s on, binding and permission are over.
    relay.clock.advance(Duration::from_secs(600));
    let dropped = relay.counters().dropped.load(Ordering::Relaxed);
    client.socket.send_to(&frame, client.server).unwrap();
    relay.wait_for(|c| &c.dropped, dropped + 1);
}

#[test]
fn refresh_with_lifetime_zero_deletes_the_allocation_and_its_socket() {
    let relay = start(config());
    let mut client = Client::new(relay.handle.local_addr, "alice", "secret");
    assert!(success(&client.allocate()));
    let refreshed = client.request(REFRESH, &|w, _| {
        w.add_attribute(&Lifetime::new(1200)).unwrap();
    });
    let msg = Message::from_bytes(&refreshed).unwrap();
    assert_eq!(msg.attribute::<Lifetime>().unwrap().seconds(), 1200);
    let deleted = client.request(REFRESH, &|w, _| {
        w.add_attribute(&Lifetime::new(0)).unwrap();
    });
    let msg = Message::from_bytes(&deleted).unwrap();
    assert_eq!(msg.attribute::<Lifetime>().unwrap().seconds(), 0);
    relay.wait_for(|c| &c.closed, 1);
    let again = client.request(REFRESH, &|_, _| {});
    assert_eq!(error_code(&again), Some(437));
    // Another user's credentials on this five-tuple's allocation: 441.
    assert!(success(&client.allocate()));
    let mut bob = Client::new(relay.handle.local_addr, "bob", "hunter2");
    bob.socket = client.socket.try_clone().unwrap();
    let answer = bob.request(REFRESH, &|_, _| {});
    assert_eq!(error_code(&answer), Some(441));
}

#[test]
fn even_port_reserves_the_next_port_for_one_token_use() {
    let relay = start(config());
    let mut first = Client::new(relay.handle.local_addr, "alice", "secret");
    let answer = first.request(ALLOCATE, &|w, _| {
        w.add_attribute(&RequestedTransport::new(17)).unwrap();
        w.add_attribute(&EvenPort::new(true)).unwrap();
    });
    let relayed = Client::relayed(&answer);
    assert_eq!(relayed.port() % 2, 0);
    let msg = Message::from_bytes(&answer).unwrap();
    let token = msg.attribute::<ReservationToken>().unwrap().token();
    let with_token = move |w: &mut MessageWriteVec, _| {
        w.add_attribute(&RequestedTransport::new(17)).unwrap();
        w.add_attribute(&ReservationToken::new(token)).unwrap();
    };
    let mut second = Client::new(relay.handle.local_addr, "alice", "secret");
    let answer = second.request(ALLOCATE, &with_token);
    assert_eq!(Client::relayed(&answer).port(), relayed.port() + 1);
    let mut third = Client::new(relay.handle.local_addr, "alice", "secret");
    assert_eq!(
        error_code(&third.request(ALLOCATE, &with_token)),
        Some(508),
        "used up"
    );
    // A token with EVEN-PORT is a bad request.
    let answer = third.request(ALLOCATE, &|w, _| {
        w.add_attribute(&RequestedTransport::new(17)).unwrap();
        w.add_attribute(&EvenPort::new(false)).unwrap();
        w.add_attribute(&ReservationToken::new(token)).unwrap();
    });
    assert_eq!(error_code(&answer), Some(400));
    // Transport other than UDP: 442.
    let answer = third.request(ALLOCATE, &|w, _| {
        w.add_attribute(&RequestedTransport::new(6)).unwrap();
    });
    assert_eq!(error_code(&answer), Some(442));
}

#[test]
fn missed_removal_events_still_close_the_ended_allocations_sockets() {
    // A removal buffer of one event: three allocations expiring together
    // overflow it, and the relay is told it lagged.
    let relay = start_with(config(), |store| store.subscriber_buffer_max(1));
    let mut clients: Vec<Client> = (0..3)
        .map(|_| Client::new(relay.handle.local_addr, "alice", "secret"))
        .collect();
    for client in &mut clients {
        assert!(success(&client.allocate()));
    }
    relay.clock.advance(Duration::from_secs(601));
    relay.store.sweep();
    relay.wait_for(|c| &c.closed, 3);
}
