//! Transactions on Redis (ADR 0069): a refused commit takes back every
//! write its changes made, key by key. A batch with every kind of change,
//! over records that make the functions reap, trim, pop, dead-letter and
//! delete, ends in a refusal; every key of the namespace reads the same
//! afterwards (contents and expiry). The conformance suite checks what the
//! operations answer; this checks the keys under them.

mod redis;

use redis::{block_on, connect_fresh, fresh_namespace, targets, Raw};
use relaystore::queue::{JobOptions, QueueConfig};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{Error, TenantId, TxBatch};
use std::time::Duration;

const T: TenantId = TenantId(1);

/// Every key of the namespace with its type, contents and expiry, sorted.
async fn snapshot(raw: &mut Raw, namespace: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = raw
            .query(
                ::redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(format!("{{{namespace}*"))
                    .arg("COUNT")
                    .arg(1000),
            )
            .await;
        keys.extend(batch);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let kind: String = raw.query(::redis::cmd("TYPE").arg(&key)).await;
        let mut contents: Vec<Vec<u8>> = match kind.as_str() {
            "string" => vec![raw.query(::redis::cmd("GET").arg(&key)).await],
            "hash" => raw.query(::redis::cmd("HGETALL").arg(&key)).await,
            "zset" => {
                raw.query(
                    ::redis::cmd("ZRANGE")
                        .arg(&key)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES"),
                )
                .await
            }
            "set" => raw.query(::redis::cmd("SMEMBERS").arg(&key)).await,
            "list" => {
                raw.query(::redis::cmd("LRANGE").arg(&key).arg(0).arg(-1))
                    .await
            }
            other => panic!("a key of type {other}"),
        };
        if kind == "hash" {
            // Field order is not content: sort the pairs.
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = contents
                .chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect();
            pairs.sort();
            contents = pairs.into_iter().flat_map(|(f, v)| [f, v]).collect();
        }
        if kind == "set" {
            contents.sort();
        }
        let expiry: i64 = raw.query(::redis::cmd("PEXPIRETIME").arg(&key)).await;
        out.push(format!(
            "{key} {kind} expires {expiry}: {:?}",
            contents
                .iter()
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
        ));
    }
    out
}

#[test]
fn a_refused_commit_leaves_every_key_as_it_was() {
    let target = targets()
        .into_iter()
        .find(|t| t.name == "standalone")
        .expect("a standalone target");
    block_on(async {
        let namespace = fresh_namespace("tx-keys");
        // No sweeper pass within the test: only its own calls write.
        let options = target
            .options
            .clone()
            .sweep_interval(Duration::from_secs(60));
        let quiet = redis::Target {
            name: target.name,
            options,
        };
        let e = connect_fresh(&quiet, &namespace, redis::config())
            .await
            .unwrap();
        let mut raw = Raw::connect(&target).await;
        let long = Duration::from_secs(60);
        let lease = e.grant(T, "host-a", long, None).await.unwrap();
        let v1 = e
            .publish(T, lease.id, "lobby-1", b"players=3", None)
            .await
            .unwrap()
            .version;
        e.publish(T, lease.id, "lobby-x", b"closing", None)
            .await
            .unwrap();
        // A listing whose lease expires: the next creation reaps it.
        let short = e
            .grant(T, "host-b", Duration::from_millis(20), None)
            .await
            .unwrap();
        e.publish(T, short.id, "old", b"gone soon", None)
            .await
            .unwrap();
        // A full stream that trims its oldest entry on an append.
        let log = StreamConfig::new(2, 1024, WhenFull::TrimOldest);
        e.create_stream(T, "log", log).await.unwrap();
        for p in [&b"e0"[..], b"e1"] {
            e.append(T, "log", p, None).await.unwrap();
        }
        e.commit(T, "log", "reader", 1).await.unwrap();
        // A queue of one attempt: a failure dead-letters the job.
        let queue = QueueConfig::default().attempts_max(1);
        e.create_queue(T, "work", queue).await.unwrap();
        for p in [&b"a"[..], b"b", b"c"] {
            e.enqueue(T, "work", p, JobOptions::default())
                .await
                .unwrap();
        }
        let claimed = e.claim(T, "work", "w", Some(long), 2).await.unwrap();
        e.outbox_put(T, "made", b"the outbox's queue", None)
            .await
            .unwrap();
        e.schedule(T, "beat", "@every 1s", "work", b"tick")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;

        let batch = |refused: bool| {
            let mut tx = TxBatch::new(T);
            tx.publish(lease.id, "lobby-2", b"players=1").unwrap();
            tx.update_listing("lobby-1", v1, b"players=4").unwrap();
            tx.unpublish("lobby-x", None).unwrap();
            tx.append("log", b"e2").unwrap();
            tx.append("log", b"e3").unwrap();
            tx.commit_offset("log", "reader", 3).unwrap();
            tx.commit_offset("log", "other", 2).unwrap();
            tx.trim_stream("log", 3).unwrap();
            tx.enqueue("work", b"d", JobOptions::default()).unwrap();
            tx.outbox_put("lobby.changed", b"lobby-1").unwrap();
            tx.ack("work", claimed[0].id, claimed[0].claim).unwrap();
            tx.fail("work", claimed[1].id, claimed[1].claim, "busy")
                .unwrap();
            tx.unschedule("beat").unwrap();
            tx.schedule("beat-2", "@every 2s", "work", b"tock").unwrap();
            tx.notify("lobby-changed").unwrap();
            if refused {
                tx.update_listing("lobby-3", 1, b"never").unwrap();
            }
            tx
        };
        let before = snapshot(&mut raw, &namespace).await;
        assert!(
            before.iter().any(|k| k.contains(":p:old ")),
            "the expired listing is there to reap: {before:#?}"
        );
        assert_eq!(
            e.commit_tx(batch(true)).await.map(drop),
            Err(Error::NotFound)
        );
        let after = snapshot(&mut raw, &namespace).await;
        assert_eq!(after, before, "the keys after a refused commit");

        // The same batch without its refusal changes them: the snapshot
        // sees what a commit writes.
        let done = e.commit_tx(batch(false)).await.unwrap();
        assert_eq!(done.applied.len(), 15);
        assert_ne!(snapshot(&mut raw, &namespace).await, before);
        assert_eq!(
            e.get_listing(T, "lobby-1").await.unwrap().attrs.as_ref(),
            b"players=4"
        );
        assert_eq!(e.stream_info(T, "log").await.unwrap().first, 3);
    });
}
