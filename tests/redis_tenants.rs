//! `tenants_max` on the Redis engine (ADR 0072): the store's register of
//! tenants, which a new tenant joins with its first record and leaves once
//! it holds nothing. A tenant that held every kind of record is forgotten
//! with every key it had, once the last of them ended; the sweeper holder
//! forgets on its own; and a creation racing the forgetting keeps its
//! tenant registered. Each test starts a `redis-server` of its own on a
//! free loopback port (the binary must be on PATH: its absence fails the
//! test, saying how to install it).

mod redis;

use redis::servers::{admin, Server};
use redis::{block_on, config, fresh_namespace};
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{Error, Scope, StoreConfig, TenantId};
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
const MS: Duration = Duration::from_millis(1);

/// Limits whose records all end within a second or two.
fn short_lived() -> StoreConfig {
    let mut c = config()
        .replay_grace(MS * 200)
        .tombstone_ttl(MS * 300)
        .tenants_max(1);
    c.idempotency_ttl = MS * 300;
    c
}

async fn engine(server: &Server, namespace: &str, sweep: Duration) -> RedisEngine {
    let options = RedisOptions::standalone(&server.url())
        .namespace(namespace)
        .sweep_interval(sweep);
    RedisEngine::connect(options, short_lived()).await.unwrap()
}

/// The tenant's keys on `server` that would never expire (no TTL).
async fn lasting_keys(server: &Server, namespace: &str, tenant: TenantId) -> Vec<String> {
    let mut admin = admin(server).await;
    let keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("{{{namespace}:{}}}*", tenant.0))
        .query_async(&mut admin)
        .await
        .unwrap();
    let mut lasting = Vec::new();
    for key in keys {
        let ttl: i64 = ::redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut admin)
            .await
            .unwrap();
        if ttl < 0 {
            lasting.push(key);
        }
    }
    lasting
}

/// The generation the register holds for `tenant`, if it holds it.
async fn registered(server: &Server, namespace: &str, tenant: TenantId) -> Option<String> {
    ::redis::cmd("HGET")
        .arg(format!("{{{namespace}}}:meta:tenants"))
        .arg(tenant.0)
        .query_async(&mut admin(server).await)
        .await
        .unwrap()
}

/// The name of the library's function that takes a tenant off the
/// register on `server` (the only library a private server has).
async fn unregister_function(server: &Server) -> String {
    fn names(value: &::redis::Value, out: &mut Vec<String>) {
        match value {
            ::redis::Value::BulkString(bytes) => {
                out.push(String::from_utf8_lossy(bytes).into_owned())
            }
            ::redis::Value::Array(items) | ::redis::Value::Set(items) => {
                items.iter().for_each(|v| names(v, out))
            }
            ::redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
                names(k, out);
                names(v, out)
            }),
            _ => {}
        }
    }
    let listed: ::redis::Value = ::redis::cmd("FUNCTION")
        .arg("LIST")
        .query_async(&mut admin(server).await)
        .await
        .unwrap();
    let mut all = Vec::new();
    names(&listed, &mut all);
    all.into_iter()
        .find(|n| n.starts_with("relaystore_") && n.ends_with("_meta_unregister"))
        .expect("the library's meta_unregister function")
}

/// The refusal of a full `tenants_max` of one.
fn full() -> Result<(), Error> {
    Err(Error::CapacityExceeded {
        scope: Scope::Tenants,
        limit: 1,
        used: 1,
    })
}

/// A tenant holds a lease with a listing and a join consumed under an
/// idempotency key, a presence record, a lock, a revoked lease's
/// tombstone, and a stream it deleted: while any of them lives it stays
/// registered (another tenant is refused); once all have ended the audit
/// forgets it, none of its keys is left without an expiry, and the other
/// tenant takes its place.
#[test]
fn a_tenant_is_forgotten_with_its_keys_once_everything_it_held_ended() {
    let server = Server::start(&[]);
    block_on(async {
        let namespace = fresh_namespace("forget");
        let e = engine(&server, &namespace, Duration::from_secs(60)).await;
        let g = e.grant(T, "host", MS * 300, None).await.unwrap();
        e.publish(T, g.id, "lobby", b"", None).await.unwrap();
        let t = e.begin_join(T, "lobby", "c", MS * 300, None).await.unwrap();
        let observed = std::net::SocketAddr::from(([203, 0, 113, 7], 4000));
        e.bind_endpoint(T, t.attempt, &t.token, observed)
            .await
            .unwrap();
        e.consume(T, &t.token, Some("k")).await.unwrap();
        e.heartbeat(T, "alice", MS * 300, None, None).await.unwrap();
        e.try_lock(T, "job", "w", MS * 300, None)
            .await
            .unwrap()
            .expect("a free lock");
        let revoked = e.grant(T, "host", MS * 300, None).await.unwrap();
        e.revoke(T, revoked.id).await.unwrap();
        e.create_stream(T, "log", StreamConfig::new(10, 1 << 10, WhenFull::Refuse))
            .await
            .unwrap();
        e.delete_stream(T, "log").await.unwrap();
        assert_eq!(e.forget_idle_tenants().await, Ok(0), "it holds records");
        assert_eq!(e.grant(OTHER, "h", MS * 300, None).await.map(drop), full());
        // Every record's end, the replay memory's and the tombstone's
        // included, then a sweep to remove what expired.
        tokio::time::sleep(MS * 900).await;
        e.sweep().await.unwrap();
        assert_eq!(e.forget_idle_tenants().await, Ok(1));
        assert_eq!(registered(&server, &namespace, T).await, None);
        assert_eq!(
            lasting_keys(&server, &namespace, T).await,
            Vec::<String>::new(),
            "keys of a forgotten tenant that never expire"
        );
        e.grant(OTHER, "h", MS * 60_000, None)
            .await
            .expect("the forgotten tenant's place");
        assert_eq!(e.grant(T, "h", MS * 300, None).await.map(drop), full());
    });
}

/// The sweeper holder forgets on its own, every 600 sweeps: with sweeps
/// 5 ms apart, a tenant whose lease expired makes room for another within
/// a few seconds.
#[test]
fn the_sweeper_forgets_idle_tenants() {
    let server = Server::start(&[]);
    block_on(async {
        let namespace = fresh_namespace("forget-loop");
        let e = engine(&server, &namespace, MS * 5).await;
        e.grant(T, "host", MS * 100, None).await.unwrap();
        assert_eq!(e.grant(OTHER, "h", MS * 100, None).await.map(drop), full());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match e.grant(OTHER, "h", MS * 60_000, None).await {
                Ok(_) => break,
                Err(refused) => {
                    assert_eq!(Err(refused), full());
                    assert!(Instant::now() < deadline, "T was never forgotten");
                    tokio::time::sleep(MS * 100).await;
                }
            }
        }
    });
}

/// The interleaving the register's generations are for: the audit saw the
/// tenant idle and deleted its keys, then the tenant made a record again
/// (registering anew), and only then does the audit take it off the
/// register, with the generation it read: the tenant stays registered (an
/// unconditional removal would leave a live tenant uncounted).
#[test]
fn a_tenant_that_comes_back_while_it_is_forgotten_stays_registered() {
    let server = Server::start(&[]);
    block_on(async {
        let namespace = fresh_namespace("forget-race");
        let e = engine(&server, &namespace, Duration::from_secs(60)).await;
        e.grant(T, "host", MS * 50, None).await.unwrap();
        let before = registered(&server, &namespace, T)
            .await
            .expect("registered");
        tokio::time::sleep(MS * 100).await;
        e.sweep().await.unwrap();
        // The audit's first step, by hand: the tenant's own keys deleted.
        let mut admin = admin(&server).await;
        let keys: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("{{{namespace}:{}}}*", T.0))
            .query_async(&mut admin)
            .await
            .unwrap();
        let _: () = ::redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut admin)
            .await
            .unwrap();
        // The tenant comes back.
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        let after = registered(&server, &namespace, T)
            .await
            .expect("registered");
        assert_ne!(after, before, "registered anew");
        // The audit's last step, with the generation it read.
        let unregistered: i64 = ::redis::cmd("FCALL")
            .arg(unregister_function(&server).await)
            .arg(1)
            .arg(format!("{{{namespace}}}:meta"))
            .arg(T.0)
            .arg(&before)
            .query_async(&mut admin)
            .await
            .unwrap();
        assert_eq!(unregistered, 0);
        assert_eq!(registered(&server, &namespace, T).await, Some(after));
        assert!(e.get_lease(T, g.id).await.is_ok());
        assert_eq!(e.grant(OTHER, "h", MS * 100, None).await.map(drop), full());
    });
}
