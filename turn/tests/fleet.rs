//! Two relays keeping their records on one Redis server (`REDIS_URL`,
//! which `scripts/test` starts): the per-user quota holds across both,
//! an allocation deleted on one frees room on the other, and datagrams
//! pass under a permission read from Redis. A missing server fails the
//! test, saying how to start one.

mod client;

use client::{error_code, peer_socket, success, Client, RelayThread};
use relaystore_turn::{state, Config, Records, Relay};
use std::time::{SystemTime, UNIX_EPOCH};
use stun_types::message::{Message, MessageWriteExt};
use turn_types::attribute::{Data, Lifetime};
use turn_types::message::REFRESH;

fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| {
        panic!(
            "REDIS_URL is not set: run the tests with scripts/test, which starts \
             the Redis servers, or `eval \"$(scripts/redis-servers start)\"` first"
        )
    })
}

fn start(namespace: &str) -> RelayThread {
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        relay_ip: "127.0.0.1".parse().unwrap(),
        min_port: 45000,
        max_port: 47999,
        realm: client::REALM.to_string(),
        users: vec![("alice".to_string(), "secret".to_string())],
        allocations_per_user: 2,
        redis: vec![redis_url()],
        redis_namespace: namespace.to_string(),
        ..Config::default()
    };
    let records = Records::redis(
        &config.redis,
        &config.redis_namespace,
        state::store_config(&config),
    )
    .expect("the Redis server at REDIS_URL");
    RelayThread::spawn(Relay::bind(config, records).unwrap(), || {})
}

#[test]
fn two_relays_share_one_per_user_quota_on_redis() {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let namespace = format!("turn-fleet-{}-{nanos}", std::process::id());
    let east = start(&namespace);
    let west = start(&namespace);
    let mut first = Client::new(east.handle.local_addr, "alice", "secret");
    let mut second = Client::new(west.handle.local_addr, "alice", "secret");
    let mut third_east = Client::new(east.handle.local_addr, "alice", "secret");
    let mut third_west = Client::new(west.handle.local_addr, "alice", "secret");
    assert!(success(&first.allocate()));
    let relayed = Client::relayed(&second.allocate());
    // Two allocations, one on each relay: alice's quota of 2 is used up
    // on both.
    assert_eq!(error_code(&third_east.allocate()), Some(486));
    assert_eq!(error_code(&third_west.allocate()), Some(486));
    // Deleting the one on the east relay frees room on the west.
    let deleted = first.request(REFRESH, &|w, _| {
        w.add_attribute(&Lifetime::new(0)).unwrap();
    });
    assert!(success(&deleted));
    assert!(success(&third_west.allocate()));
    // The west relay's datagram path reads its permission from Redis.
    let peer = peer_socket();
    assert!(success(&second.permit(peer.local_addr().unwrap())));
    peer.send_to(b"through redis", relayed).unwrap();
    let data = second.receive();
    let msg = Message::from_bytes(&data).unwrap();
    assert_eq!(msg.attribute::<Data>().unwrap().data(), b"through redis");
}
