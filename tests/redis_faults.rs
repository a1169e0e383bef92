//! The Redis engine when Redis misbehaves: an evicting configuration is
//! refused at connect; a server that stops answering makes calls fail
//! closed within the call timeout and leaves nothing partial; a restart that
//! lost the data gives `Restarted` for old ids and fences, and so does a
//! cluster master that comes back empty for its tenants; an events
//! listener whose connection is cut reports what it missed, and gives each
//! wake listener one wake saying what it missed is unknown when it is
//! back; a call whose connection is cut after the server ran it is not
//! sent again. Each test starts
//! a `redis-server` of its own on a free loopback port (the binary must be
//! on PATH: its absence fails the test, saying how to install it).

mod redis;

use futures_util::StreamExt;
use redis::servers::{admin, slot_of, two_master_cluster, wait_cluster_ok, Server};
use redis::{block_on, config, fresh_namespace};
use relaystore::events::{Cause, Collection, Gap, Received, RecordId};
use relaystore::queue::{JobOptions, QueueConfig};
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::wake::{Missed, Wake};
use relaystore::{DegradedReason, Error, Health, LeaseId, ScheduleRunner, TenantId};
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);
const MS: Duration = Duration::from_millis(1);
const CALL_TIMEOUT: Duration = Duration::from_millis(200);

async fn engine(server: &Server) -> Result<RedisEngine, Error> {
    let options = RedisOptions::standalone(&server.url())
        .namespace(&fresh_namespace("faults"))
        .call_timeout(CALL_TIMEOUT);
    RedisEngine::connect(options, config()).await
}

#[test]
fn an_evicting_redis_is_refused_at_connect() {
    let server = Server::start(&["--maxmemory-policy", "allkeys-lru"]);
    let refused = block_on(engine(&server));
    assert!(
        matches!(
            &refused,
            Err(Error::InvalidConfig {
                field: "maxmemory-policy",
                values,
                ..
            }) if values.contains("allkeys-lru")
        ),
        "{refused:?}"
    );
    let ok = Server::start(&["--maxmemory-policy", "noeviction"]);
    block_on(engine(&ok)).expect("noeviction is accepted");
}

/// A declaration of record kinds that does not hold together is refused
/// at connect, naming the kinds, before the engine reaches for a server.
#[test]
fn a_bad_kind_declaration_is_refused_at_connect() {
    let options = RedisOptions::standalone("redis://127.0.0.1:1/");
    let config = config()
        .declare(relaystore::RecordKind::new("permission"))
        .declare(relaystore::RecordKind::new("permission"));
    let refused = block_on(RedisEngine::connect(options, config));
    assert!(
        matches!(&refused, Err(Error::InvalidConfig { field, .. }) if field.starts_with("kinds")),
        "{refused:?}"
    );
}

#[test]
fn a_server_that_stops_answering_fails_calls_closed_and_leaves_nothing_partial() {
    let server = Server::start(&[]);
    block_on(async {
        let e = engine(&server).await.unwrap();
        let mut leases = Vec::new();
        for i in 0..6 {
            let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
            e.try_lock(T, &format!("job-{i}"), "a", MS * 60_000, Some(g.id))
                .await
                .unwrap()
                .unwrap();
            leases.push(g);
        }
        server.signal("-STOP");
        for (i, g) in leases.iter().enumerate() {
            let started = Instant::now();
            let outcome = if i % 2 == 0 {
                e.revoke(T, g.id).await
            } else {
                e.renew(T, g.id, MS * 60_000).await.map(drop)
            };
            assert!(
                matches!(outcome, Err(Error::BackendUnavailable { .. })),
                "{outcome:?}"
            );
            // Bounded by the call timeout, not hanging (a generous margin
            // for a loaded machine).
            assert!(
                started.elapsed() < CALL_TIMEOUT * 10,
                "{:?}",
                started.elapsed()
            );
        }
        assert_eq!(
            format!("{:?}", e.health().await),
            "Degraded { reason: BackendUnreachable }"
        );
        server.signal("-CONT");
        // Each revoke that timed out ran entirely or not at all: its lease
        // and its lock are gone together, or both still there.
        let deadline = Instant::now() + Duration::from_secs(10);
        for (i, g) in leases.iter().enumerate() {
            let lease = loop {
                match e.get_lease(T, g.id).await {
                    Err(Error::BackendUnavailable { .. }) if Instant::now() < deadline => {}
                    other => break other,
                }
            };
            let lock = e.get_lock(T, &format!("job-{i}")).await;
            match lease {
                Ok(_) => assert!(lock.is_ok(), "lease {i} live but its lock gone: {lock:?}"),
                Err(Error::Revoked) => {
                    assert_eq!(lock.map(drop), Err(Error::NotFound), "lease {i}")
                }
                other => panic!("lease {i}: {other:?}"),
            }
        }
        assert_eq!(format!("{:?}", e.health().await), "Ready");
    });
}

/// A schedule runner whose renewal fails transiently (the server paused
/// past the call timeout) keeps its fence: once the server answers again,
/// the same runner renews and fires. Dropping the fence would lock every
/// runner out for the lock's TTL, this one included (its own live lock
/// answers "held"). The wait before a retry doubles with each failure.
#[test]
fn a_schedule_runner_keeps_its_lock_through_a_transient_failure() {
    let server = Server::start(&[]);
    block_on(async {
        let e = engine(&server).await.unwrap();
        let mut runner = ScheduleRunner::new(&e, T, "a", MS * 30_000);
        assert!(runner.step().await.unwrap().run.is_some());
        assert!(runner.is_leader());
        server.signal("-STOP");
        for retry in [MS * 10, MS * 20] {
            let failed = runner.step().await;
            assert!(
                failed.as_ref().is_err_and(Error::is_transient),
                "{failed:?}"
            );
            assert!(runner.is_leader(), "the fence is kept");
            assert_eq!(runner.retry_wait(), retry);
        }
        server.signal("-CONT");
        let deadline = Instant::now() + Duration::from_secs(10);
        let step = loop {
            match runner.step().await {
                Err(e) if e.is_transient() && Instant::now() < deadline => {
                    tokio::time::sleep(runner.retry_wait()).await;
                }
                other => break other,
            }
        };
        assert!(step.unwrap().run.is_some(), "leads again at once");
        assert!(runner.is_leader());
        assert_eq!(runner.retry_wait(), Duration::ZERO);
        // Another runner cannot take it meanwhile.
        let mut other = ScheduleRunner::new(&e, T, "b", MS * 30_000);
        assert_eq!(other.step().await.unwrap().run, None);
        runner.resign().await.unwrap();
        assert!(other.step().await.unwrap().run.is_some());
    });
}

/// A `claim_wait` dropped mid-call (a caller's timeout while the server
/// is paused with the claim sent) leaves no job claimed for nobody: once
/// the server runs the claim, the engine finds the caller gone and gives
/// the claim back, so the job is ready at once with its attempt unused
/// (before, it stayed hidden for its 60 s visibility, one attempt used).
/// The give-back is seen by its wake, published on the store's wake
/// channel.
#[test]
fn a_claim_dropped_mid_call_gives_its_jobs_back() {
    let server = Server::start(&[]);
    block_on(async {
        let namespace = fresh_namespace("cancel");
        let options = RedisOptions::standalone(&server.url())
            .namespace(&namespace)
            .call_timeout(Duration::from_secs(5));
        let e = RedisEngine::connect(options, config()).await.unwrap();
        for queue in ["work", "idle"] {
            e.create_queue(T, queue, QueueConfig::default())
                .await
                .unwrap();
        }
        let job = e
            .enqueue(T, "work", b"x", JobOptions::default())
            .await
            .unwrap();
        // The handle's listener is up before the pause (a wait on an
        // empty queue), so the claim below is the first thing sent.
        let idle = tokio::time::timeout(MS * 200, e.claim_wait(T, "idle", "w", None, 1)).await;
        assert!(idle.is_err(), "nothing to claim there");
        let mut wakes = ::redis::Client::open(server.url())
            .unwrap()
            .get_async_pubsub()
            .await
            .unwrap();
        wakes
            .subscribe(format!("relaystore:{namespace}:wakes"))
            .await
            .unwrap();
        server.signal("-STOP");
        let minute = Some(MS * 60_000);
        let dropped =
            tokio::time::timeout(MS * 100, e.claim_wait(T, "work", "w1", minute, 1)).await;
        assert!(
            dropped.is_err(),
            "the caller gave up while the server was paused"
        );
        server.signal("-CONT");
        let woken = tokio::time::timeout(Duration::from_secs(5), wakes.on_message().next())
            .await
            .expect("the claim was run and given back")
            .expect("a wake");
        let text: Vec<u8> = woken.get_payload().unwrap();
        assert!(
            String::from_utf8_lossy(&text).contains("work"),
            "the queue's wake: {}",
            String::from_utf8_lossy(&text)
        );
        let got = e.claim(T, "work", "w2", minute, 1).await.unwrap();
        assert_eq!(got.len(), 1, "ready again at once");
        assert_eq!((got[0].id, got[0].attempt), (job, 1), "its attempt unused");
    });
}

/// A server at `maxmemory` under `noeviction` still answers reads and
/// removals: the functions that only read are flagged `no-writes`, the
/// removals `allow-oom`, so Redis runs them where it refuses every other
/// function (a grant here).
#[test]
fn reads_and_removals_are_answered_at_maxmemory() {
    let server = Server::start(&["--maxmemory-policy", "noeviction"]);
    block_on(async {
        let e = engine(&server).await.unwrap();
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        e.publish(T, g.id, "lobby", b"open", None).await.unwrap();
        let ticket = e
            .begin_join(T, "lobby", "client", MS * 60_000, None)
            .await
            .unwrap();
        let lock = e
            .try_lock(T, "room", "host", MS * 60_000, None)
            .await
            .unwrap()
            .expect("the lock is free");
        e.heartbeat(T, "member", MS * 60_000, None, Some(g.id))
            .await
            .unwrap();
        let mut admin = admin(&server).await;
        assert_eq!(e.health().await, Health::Ready);
        set_maxmemory(&mut admin, 1).await;
        assert!(
            e.grant(T, "other", MS * 60_000, None).await.is_err(),
            "the server is full"
        );
        assert_eq!(
            e.health().await,
            Health::Degraded {
                reason: DegradedReason::BackendFull
            },
            "health says so"
        );
        assert_eq!(
            e.get_lease(T, g.id).await.map(|l| l.holder),
            Ok("host".into())
        );
        assert_eq!(
            e.get_listing(T, "lobby").await.map(|l| l.attrs.to_vec()),
            Ok(b"open".to_vec())
        );
        assert!(e.get_presence(T, "member").await.is_ok());
        assert_eq!(
            e.list_leases(T, None, 10).await.map(|p| p.items.len()),
            Ok(1)
        );
        // Removals run too: a relay frees memory by revoking.
        e.cancel_join(T, ticket.attempt).await.unwrap();
        e.release_lock(T, "room", lock.fence).await.unwrap();
        assert_eq!(e.get_lock(T, "room").await.map(drop), Err(Error::NotFound));
        e.leave(T, "member").await.unwrap();
        e.unpublish(T, "lobby", None).await.unwrap();
        e.revoke(T, g.id).await.unwrap();
        assert_eq!(e.get_lease(T, g.id).await.map(drop), Err(Error::Revoked));
        set_maxmemory(&mut admin, 0).await;
        assert_eq!(e.health().await, Health::Ready);
    });
}

/// A failed call says whether it may have run: a server at `maxmemory`
/// refuses a grant before running it (out of memory) and a server that
/// is gone refuses the connection, so a retry is safe; a paused server
/// leaves a call sent and unanswered, which may have run. (Before, every
/// one was the same `BackendUnavailable`.)
#[test]
fn a_backend_failure_says_whether_the_call_may_have_run() {
    let mut server = Server::start(&["--maxmemory-policy", "noeviction"]);
    block_on(async {
        let e = engine(&server).await.unwrap();
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        let mut admin = admin(&server).await;
        set_maxmemory(&mut admin, 1).await;
        let full = e.grant(T, "other", MS * 60_000, None).await;
        assert!(
            matches!(
                &full,
                Err(Error::BackendUnavailable {
                    may_have_run: false,
                    ..
                })
            ),
            "a grant on a full server: {full:?}"
        );
        assert!(!full.unwrap_err().may_have_run());
        set_maxmemory(&mut admin, 0).await;
        drop(admin);

        server.signal("-STOP");
        let paused = e.renew(T, g.id, MS * 60_000).await;
        assert!(
            matches!(
                &paused,
                Err(Error::BackendUnavailable {
                    may_have_run: true,
                    ..
                })
            ),
            "a renewal sent to a paused server: {paused:?}"
        );
        assert!(paused.unwrap_err().may_have_run());
        server.signal("-CONT");

        server.kill();
        // The first call after the kill may find the old connection cut
        // mid-call; once the client knows, connecting is refused.
        let deadline = Instant::now() + Duration::from_secs(10);
        let gone = loop {
            let outcome = e.renew(T, g.id, MS * 60_000).await;
            match &outcome {
                Err(Error::BackendUnavailable {
                    may_have_run: true, ..
                }) if Instant::now() < deadline => tokio::time::sleep(MS * 20).await,
                _ => break outcome,
            }
        };
        assert!(
            matches!(
                &gone,
                Err(Error::BackendUnavailable {
                    may_have_run: false,
                    ..
                })
            ),
            "a renewal to a server that is gone: {gone:?}"
        );
    });
}

#[test]
fn a_restart_that_lost_the_data_gives_restarted() {
    let mut server = Server::start(&[]);
    block_on(async {
        let e = engine(&server).await.unwrap();
        let before = e.incarnation();
        let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        let lock = e
            .try_lock(T, "job", "a", MS * 60_000, None)
            .await
            .unwrap()
            .unwrap();
        server.restart();
        all_restarted(&e, T, g.id, lock.fence).await;
        assert_ne!(e.incarnation(), before, "a new incarnation");
        // New work goes on in the new incarnation, with higher fences.
        let again = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        assert!(again.fence > g.fence);
        let relock = e.try_lock(T, "job", "b", MS * 60_000, None).await.unwrap();
        assert!(relock.is_some_and(|l| l.fence > lock.fence));
    });
}

#[test]
fn an_events_listener_cut_off_reports_what_it_missed() {
    let server = Server::start(&["--maxmemory-policy", "noeviction"]);
    block_on(async {
        let namespace = fresh_namespace("lag");
        let options = RedisOptions::standalone(&server.url()).namespace(&namespace);
        let a = RedisEngine::connect(options.clone(), config())
            .await
            .unwrap();
        let b = RedisEngine::connect(options, config()).await.unwrap();
        let seen_by_b = b.subscribe().await.unwrap();
        // A wake listener on the same connection: a notify made while it
        // is away is lost with the connection.
        let waiting = b.listen(T, "lobby").await.unwrap();
        let next = || async {
            tokio::time::timeout(Duration::from_secs(2), seen_by_b.recv())
                .await
                .expect("an event within 2 s")
                .unwrap()
        };
        let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
        a.revoke(T, g.id).await.unwrap();
        let seen = match next().await {
            Received::Event(e) if e.cause == Cause::Revoked => e.seq,
            other => panic!("{other:?}"),
        };
        // Cut the listener's connection (it reconnects after 100 ms), and
        // remove three leases while it is away.
        let mut raw = ::redis::Client::open(server.url().as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let killed: i64 = ::redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("pubsub")
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(killed, 1);
        for _ in 0..3 {
            let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
            a.revoke(T, g.id).await.unwrap();
        }
        a.notify(T, "lobby").await.unwrap();
        tokio::time::sleep(MS * 600).await;
        // Back: every listener is woken once, so the lost notify is made up
        // for (a spurious wake costs a look; a lost one a stalled worker).
        // It says it may have missed wakes it cannot count.
        assert_eq!(
            waiting.try_recv(),
            Some(Wake::new(T, "lobby").with_missed(Missed::Unknown)),
            "a wake lost with the connection was not made up for"
        );
        let g = a.grant(T, "host", MS * 60_000, None).await.unwrap();
        a.revoke(T, g.id).await.unwrap();
        // The gap names the tenant and the numbers missed.
        assert_eq!(
            next().await,
            Received::Lagged {
                missed: 3,
                gaps: vec![Gap {
                    tenant: T,
                    from: seen + 1,
                    to: seen + 3
                }],
                every_tenant: false,
            }
        );
        assert!(matches!(next().await, Received::Event(e) if e.cause == Cause::Revoked));
    });
}

/// A private server that a test may hold busy, as a standalone server or
/// as a one-node Redis Cluster (every slot on it), with a user `cut` for
/// the engine whose connections the test can kill by name.
async fn private_target(cluster: bool) -> (Server, RedisOptions, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(fresh_namespace("cut"));
    std::fs::create_dir_all(&dir).expect("a directory for the server");
    let dir_arg = dir
        .to_str()
        .expect("a UTF-8 temporary directory")
        .to_owned();
    let mut extra = vec!["--dir", &dir_arg];
    if cluster {
        extra.extend([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ]);
    }
    let server = Server::start(&extra);
    let mut admin = admin(&server).await;
    let _: () = ::redis::cmd("ACL")
        .arg(&["SETUSER", "cut", "on", ">cut-secret", "~*", "&*", "+@all"][..])
        .query_async(&mut admin)
        .await
        .expect("ACL SETUSER");
    let url = format!("redis://cut:cut-secret@127.0.0.1:{}/", server.port);
    let options = if cluster {
        let _: () = ::redis::cmd("CLUSTER")
            .arg(&["ADDSLOTSRANGE", "0", "16383"][..])
            .query_async(&mut admin)
            .await
            .expect("CLUSTER ADDSLOTSRANGE");
        wait_cluster_ok(&server).await;
        RedisOptions::cluster(&[url])
    } else {
        RedisOptions::standalone(&url)
    };
    (server, options.namespace(&fresh_namespace("cut")), dir)
}

/// Sets the server's `maxmemory` (bytes; 0: none): 1 fills it at once.
async fn set_maxmemory(admin: &mut ::redis::aio::MultiplexedConnection, bytes: u64) {
    let _: () = ::redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(bytes)
        .query_async(admin)
        .await
        .unwrap();
}

/// The engine's connection is cut after the server ran its call and before
/// the answer left: the call fails closed and is never sent again (a
/// renewal sent twice moves the version by two; a grant would make two
/// leases, a consume would answer `ReplayDetected` for a token it had just
/// consumed). The server is held busy by a script while the renewal, and
/// then a kill of the engine's connections, queue up behind it; once the
/// script ends the server runs the renewal, then the kill, so the answer
/// is never written. On a standalone server and on a one-node cluster.
#[test]
fn a_call_cut_off_after_it_ran_is_not_sent_again() {
    for cluster in [false, true] {
        block_on(async move {
            let (server, options, dir) = private_target(cluster).await;
            let e = RedisEngine::connect(options.call_timeout(Duration::from_secs(5)), config())
                .await
                .unwrap();
            let g = e.grant(T, "host", MS * 60_000, None).await.unwrap();
            // A machine too loaded to keep that order is tried again with
            // wider gaps.
            let mut gap = MS * 100;
            loop {
                let before = e.get_lease(T, g.id).await.unwrap().version;
                let mut busy = admin(&server).await;
                let mut killer = admin(&server).await;
                let hold = gap * 8;
                let script = "local t = redis.call('TIME') \
                    local start = t[1] * 1000000 + t[2] \
                    repeat t = redis.call('TIME') \
                    until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1]) \
                    return 1";
                let held = tokio::spawn(async move {
                    let _: i64 = ::redis::cmd("EVAL")
                        .arg(script)
                        .arg(0)
                        .arg(hold.as_micros().to_string())
                        .query_async(&mut busy)
                        .await
                        .expect("the busy script");
                });
                tokio::time::sleep(gap).await;
                let renewing = {
                    let e = e.clone();
                    tokio::spawn(async move { e.renew(T, g.id, MS * 60_000).await })
                };
                tokio::time::sleep(gap * 3).await;
                let killed: i64 = ::redis::cmd("CLIENT")
                    .arg(&["KILL", "USER", "cut"][..])
                    .query_async(&mut killer)
                    .await
                    .expect("CLIENT KILL");
                held.await.unwrap();
                let outcome = renewing.await.unwrap();
                let reconnected = Instant::now() + Duration::from_secs(10);
                let after = loop {
                    match e.get_lease(T, g.id).await {
                        Err(Error::BackendUnavailable { .. }) if Instant::now() < reconnected => {
                            tokio::time::sleep(MS * 20).await
                        }
                        other => break other.unwrap().version,
                    }
                };
                assert!(
                    killed >= 1,
                    "cluster {cluster}: no connection of the engine was killed"
                );
                assert!(
                    after <= before + 1,
                    "cluster {cluster}: the renewal ran {} times ({outcome:?})",
                    after - before
                );
                if after == before + 1 && matches!(outcome, Err(Error::BackendUnavailable { .. })) {
                    break;
                }
                // The renewal reached the server after the kill (it ran on
                // a new connection, or not at all): the order this checks
                // did not happen.
                assert!(
                    gap < MS * 400,
                    "cluster {cluster}: never cut after it ran ({outcome:?})"
                );
                eprintln!("cluster {cluster}: the renewal came after the kill with gaps of {gap:?}; trying wider");
                gap *= 2;
            }
            drop(server);
            let _ = std::fs::remove_dir_all(dir);
        });
    }
}

/// After a restart that lost `tenant`'s keys: once the engine has
/// reconnected (until then calls fail closed), its lease `lease` and its
/// lock `job` held with `fence` answer `Restarted` to every call.
async fn all_restarted(e: &RedisEngine, tenant: TenantId, lease: LeaseId, fence: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let seen = loop {
        match e.get_lease(tenant, lease).await {
            Err(Error::BackendUnavailable { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(MS * 50).await;
            }
            other => break other,
        }
    };
    assert_eq!(seen.map(drop), Err(Error::Restarted));
    assert_eq!(
        e.renew(tenant, lease, MS * 100).await.map(drop),
        Err(Error::Restarted)
    );
    assert_eq!(
        e.renew_lock(tenant, "job", fence, MS * 100).await.map(drop),
        Err(Error::Restarted)
    );
    assert_eq!(
        e.release_lock(tenant, "job", fence).await,
        Err(Error::Restarted)
    );
}

/// On a cluster, health and connect ask every primary of the slot map by
/// its address: with one of two masters down, health is `Degraded` at
/// once and stays so (it said `Ready` about 500 ms after a master died,
/// asking only the nodes the client was connected to), and `connect`
/// refuses, naming the primary it could not check; once the master is
/// back, health is `Ready` again.
#[test]
fn health_and_connect_ask_every_cluster_primary() {
    block_on(async {
        let (mut servers, dirs) = two_master_cluster().await;
        let urls: Vec<String> = servers.iter().map(Server::url).collect();
        let options = RedisOptions::cluster(&urls)
            .namespace(&fresh_namespace("reach"))
            .call_timeout(MS * 500);
        let e = RedisEngine::connect(options.clone(), config())
            .await
            .unwrap();
        assert_eq!(e.health().await, Health::Ready);
        servers[1].kill();
        let down = Health::Degraded {
            reason: DegradedReason::BackendUnreachable,
        };
        for _ in 0..8 {
            assert_eq!(e.health().await, down);
            tokio::time::sleep(MS * 250).await;
        }
        let port = servers[1].port.to_string();
        match RedisEngine::connect(options.clone(), config()).await {
            Err(Error::BackendUnavailable { detail, .. }) => {
                assert!(detail.contains(&port), "{detail}")
            }
            other => panic!("connect with a primary down: {:?}", other.map(drop)),
        }
        servers[1].spawn();
        wait_cluster_ok(&servers[0]).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while e.health().await != Health::Ready {
            assert!(
                Instant::now() < deadline,
                "Ready again once the master is back"
            );
            tokio::time::sleep(MS * 100).await;
        }
        drop(e);
        drop(servers);
        for dir in dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
}

/// A cluster master that restarts empty, while the master holding the
/// store's meta key lives on: every id, fence and lock of the tenants it
/// held answers `Restarted` (not `NotFound`), the tenants of the other
/// master keep theirs, and new work on the lost tenant goes on with
/// higher fences.
#[test]
fn a_cluster_master_that_restarts_empty_gives_restarted_for_what_it_held() {
    block_on(async {
        let (mut servers, dirs) = two_master_cluster().await;
        let namespace = fresh_namespace("lost");
        let half = |slot: u16| usize::from(slot >= 8192);
        let meta = half(slot_of(&servers[0], &format!("{{{namespace}}}:meta")).await);
        // A tenant on the other master than the meta key, and one beside it.
        let mut lost = None;
        let mut kept = None;
        for t in 1..64u64 {
            let at = half(slot_of(&servers[0], &format!("{{{namespace}:{t}}}:inc")).await);
            if at == meta {
                kept.get_or_insert(TenantId(t));
            } else {
                lost.get_or_insert(TenantId(t));
            }
        }
        let (lost, kept) = (lost.unwrap(), kept.unwrap());
        let urls: Vec<String> = servers.iter().map(Server::url).collect();
        let options = RedisOptions::cluster(&urls)
            .namespace(&namespace)
            .call_timeout(Duration::from_secs(2));
        let e = RedisEngine::connect(options, config()).await.unwrap();
        let g = e.grant(lost, "host", MS * 60_000, None).await.unwrap();
        let other = e.grant(kept, "host", MS * 60_000, None).await.unwrap();
        let lock = e
            .try_lock(lost, "job", "a", MS * 60_000, None)
            .await
            .unwrap()
            .unwrap();
        let before = e.incarnation();
        servers[1 - meta].restart();
        wait_cluster_ok(&servers[meta]).await;
        all_restarted(&e, lost, g.id, lock.fence).await;
        assert_eq!(e.incarnation(), before, "the store's incarnation lives on");
        assert_eq!(
            e.publish(lost, g.id, "room", b"", None).await.map(drop),
            Err(Error::Restarted),
            "a creation under a lost lease"
        );
        // The other master's tenant keeps its lease.
        assert_eq!(e.get_lease(kept, other.id).await.unwrap().id, other.id);
        // New work on the lost tenant goes on, with higher fences.
        let again = e.grant(lost, "host", MS * 60_000, None).await.unwrap();
        assert!(again.fence > g.fence);
        assert_eq!(e.get_lease(lost, again.id).await.unwrap().id, again.id);
        let relock = e
            .try_lock(lost, "job", "b", MS * 60_000, None)
            .await
            .unwrap();
        assert!(relock.is_some_and(|l| l.fence > lock.fence));
        // The tenant's record made again still knows what came before it.
        assert_eq!(
            e.get_lease(lost, g.id).await.map(drop),
            Err(Error::Restarted)
        );
        assert_eq!(
            e.renew_lock(lost, "job", lock.fence, MS * 100)
                .await
                .map(drop),
            Err(Error::Restarted)
        );
        // A tenant that never had a record answers another's id as a
        // missing one.
        let fresh = TenantId(1_000_000);
        assert_eq!(
            e.get_lease(fresh, g.id).await.map(drop),
            Err(Error::NotFound)
        );
        drop(e);
        drop(servers);
        for dir in dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
}

/// Grants that time out while the server is paused run once it answers
/// again, their answers lost: their leases are still swept and announced
/// when they expire, with nothing else written to the tenant (ADR 0068).
#[test]
fn grants_that_timed_out_while_the_server_was_paused_still_expire() {
    let server = Server::start(&[]);
    block_on(async {
        let e = engine(&server).await.unwrap();
        let events = e.subscribe_to(&[Collection::Leases]).await.unwrap();
        // The tenant's keys exist (a first grant made them), so a grant
        // the paused server runs later writes its lease.
        e.grant(T, "host", MS * 60_000, None).await.unwrap();
        server.signal("-STOP");
        for _ in 0..3 {
            let outcome = e.grant(T, "host", MS * 300, None).await;
            assert!(
                matches!(&outcome, Err(e) if e.may_have_run()),
                "{outcome:?}"
            );
        }
        server.signal("-CONT");
        let mut expired = 0;
        let deadline = Instant::now() + Duration::from_secs(10);
        while expired < 3 && Instant::now() < deadline {
            match tokio::time::timeout(MS * 200, events.recv()).await {
                Ok(Ok(Received::Event(ev))) if ev.cause == Cause::Expired => expired += 1,
                _ => {}
            }
        }
        assert_eq!(expired, 3, "leases of timed-out grants never swept");
    });
}

/// A revoke dropped while the paused server holds it runs once the server
/// answers, its reply lost: its removal still reaches the subscribers of
/// the handle that made it, through the channel, and a revoke answered
/// afterwards is delivered once, from its reply or its channel copy,
/// whichever came first (ADR 0068). Before, a handle skipped its own
/// channel copies, so the dropped call's removal reached only other
/// handles.
#[test]
fn a_dropped_calls_removals_reach_its_own_handles_subscribers_once() {
    let server = Server::start(&[]);
    block_on(async {
        let e = engine(&server).await.unwrap();
        let events = e.subscribe_to(&[Collection::Leases]).await.unwrap();
        let dropped = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        let answered = e.grant(T, "host", MS * 60_000, None).await.unwrap();
        server.signal("-STOP");
        // Sent, then dropped before the paused server could answer.
        let revoke = tokio::time::timeout(MS * 50, e.revoke(T, dropped.id)).await;
        assert!(revoke.is_err(), "the revoke was dropped: {revoke:?}");
        server.signal("-CONT");
        e.revoke(T, answered.id).await.unwrap();
        let mut revoked = Vec::new();
        let deadline = Instant::now() + MS * 1_500;
        while Instant::now() < deadline {
            match tokio::time::timeout(MS * 100, events.recv()).await {
                Ok(Ok(Received::Event(ev))) => revoked.push((ev.id, ev.cause)),
                Ok(other) => panic!("only events: {other:?}"),
                Err(_) => {}
            }
        }
        revoked.sort_by_key(|(id, _)| format!("{id:?}"));
        let mut expected = vec![
            (RecordId::Lease(dropped.id), Cause::Revoked),
            (RecordId::Lease(answered.id), Cause::Revoked),
        ];
        expected.sort_by_key(|(id, _)| format!("{id:?}"));
        assert_eq!(revoked, expected, "each revoked lease once");
    });
}
