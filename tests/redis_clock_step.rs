//! A step of the Redis host's wall clock (ADR 0062, "Fences never go
//! backwards"): deadlines on Redis are that clock, so a step moves every
//! deadline with it, but no fence repeats and no token is admitted twice
//! either way. Each test starts a `redis-server` of its own on a free
//! loopback port, its wall clock set by the test (`SteppedClock`: needs
//! `redis-server` and a C compiler on PATH; their absence fails the test,
//! saying how to install them).

mod redis;

use redis::servers::{admin, Server, SteppedClock};
use redis::{block_on, config, fresh_namespace};
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::{Error, JoinTicket, TenantId};
use std::net::SocketAddr;
use std::time::Duration;

const T: TenantId = TenantId(1);
const MS: Duration = Duration::from_millis(1);
const STEP_MS: i64 = 120_000;

async fn engine(server: &Server) -> RedisEngine {
    let options = RedisOptions::standalone(&server.url()).namespace(&fresh_namespace("clock"));
    RedisEngine::connect(options, config()).await.unwrap()
}

/// The server's wall clock, in ms.
async fn server_ms(server: &Server) -> i64 {
    let (s, us): (i64, i64) = ::redis::cmd("TIME")
        .query_async(&mut admin(server).await)
        .await
        .unwrap();
    s * 1000 + us / 1000
}

/// Steps `server`'s clock by `by_ms` and checks that it moved: a test
/// whose step did nothing would prove nothing.
async fn step(server: &Server, clock: &SteppedClock, by_ms: i64) {
    let before = server_ms(server).await;
    clock.set(by_ms);
    let moved = server_ms(server).await - before;
    assert!(
        (by_ms - 2_000..=by_ms + 2_000).contains(&moved),
        "the server's clock moved {moved} ms, not {by_ms}"
    );
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A bound join attempt on `lobby`, not yet consumed.
async fn bound(e: &RedisEngine, client: &str, port: u16) -> JoinTicket {
    let ticket = e
        .begin_join(T, "lobby", client, MS * 60_000, None)
        .await
        .unwrap();
    e.bind_endpoint(T, ticket.attempt, &ticket.token, addr(port))
        .await
        .unwrap();
    ticket
}

/// A step back lengthens every live deadline by the step, and that is
/// all it does: fences rise above every earlier one (the tenant's counter
/// floors them), a consumed token stays consumed, and a bound one is
/// admitted once.
#[test]
fn a_clock_stepped_back_lengthens_deadlines_and_repeats_no_fence_or_admission() {
    let clock = SteppedClock::new();
    let server = Server::start_with_clock(&[], &clock);
    block_on(async {
        let e = engine(&server).await;
        let g = e.grant(T, "host", MS * 5_000, None).await.unwrap();
        e.publish(T, g.id, "lobby", b"open", None).await.unwrap();
        let lock = e
            .try_lock(T, "room", "host", MS * 60_000, None)
            .await
            .unwrap()
            .expect("the lock is free");
        let used = bound(&e, "first", 4000).await;
        e.consume(T, &used.token, None).await.unwrap();
        let unused = bound(&e, "second", 4001).await;

        step(&server, &clock, -STEP_MS).await;

        let later = e.grant(T, "host", MS * 5_000, None).await.unwrap();
        assert!(
            later.fence > g.fence && later.fence > lock.fence,
            "a fence after the step ({}) is above those before ({}, {})",
            later.fence,
            g.fence,
            lock.fence
        );
        let other = e
            .try_lock(T, "other", "host", MS * 60_000, None)
            .await
            .unwrap()
            .expect("the lock is free");
        assert!(other.fence > later.fence, "lock fences rise too");
        assert_eq!(
            e.consume(T, &used.token, None).await.map(drop),
            Err(Error::ReplayRejected),
            "a consumed token stays consumed"
        );
        let admitted = e.consume(T, &unused.token, None).await.unwrap();
        assert_eq!(admitted.addr, addr(4001));
        assert_eq!(
            e.consume(T, &unused.token, None).await.map(drop),
            Err(Error::ReplayRejected),
            "once"
        );
        let lease = e.get_lease(T, g.id).await.unwrap();
        assert!(
            lease.remaining > Duration::from_millis(STEP_MS as u64),
            "the 5 s lease now has {:?} left: the step lengthened it",
            lease.remaining
        );
    });
}

/// A step forward ends early every record whose deadline it passes —
/// leases, listings, bound attempts — and nothing else: a token whose
/// attempt ended is refused, never admitted, and a consumed one stays
/// refused; fences go on rising.
#[test]
fn a_clock_stepped_forward_ends_records_early_and_admits_no_token_after() {
    let clock = SteppedClock::new();
    let server = Server::start_with_clock(&[], &clock);
    block_on(async {
        let e = engine(&server).await;
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        e.publish(T, g.id, "lobby", b"open", None).await.unwrap();
        let used = bound(&e, "first", 4000).await;
        e.consume(T, &used.token, None).await.unwrap();
        let unused = bound(&e, "second", 4001).await;
        let lasting = e.grant(T, "host", MS * 600_000, None).await.unwrap();

        step(&server, &clock, STEP_MS).await;

        // Gone, not only expired: the key's own expiry passed too.
        assert_eq!(e.get_lease(T, g.id).await.map(drop), Err(Error::NotFound));
        assert_eq!(
            e.get_listing(T, "lobby").await.map(drop),
            Err(Error::NotFound)
        );
        assert_eq!(
            e.consume(T, &unused.token, None).await.map(drop),
            Err(Error::NotFound),
            "a token whose attempt ended is refused"
        );
        assert_eq!(
            e.consume(T, &used.token, None).await.map(drop),
            Err(Error::NotFound),
            "a consumed token stays refused"
        );
        let left = e.get_lease(T, lasting.id).await.unwrap().remaining;
        assert!(
            left < Duration::from_millis(600_000 - STEP_MS as u64 + 1_000),
            "the 600 s lease has {left:?} left: the step shortened it"
        );
        let later = e.grant(T, "host", MS * 5_000, None).await.unwrap();
        assert!(later.fence > lasting.fence, "fences go on rising");
    });
}
